package openai

import (
	"encoding/json"
	"strings"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
)

// errorResponse is OpenAI's error body (ErrorResponse):
// {"error":{"message","type","param","code"}}, param and code nullable.
type errorResponse struct {
	Error struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Param   *string         `json:"param"`
		Code    json.RawMessage `json:"code"` // a string or null
	} `json:"error"`
}

// classify maps a failed answer:
//
//	moderation_blocked, content_policy_violation   refused (never retried)
//	401, invalid_api_key                           operator error
//	insufficient_quota, billing_hard_limit_reached operator error (not retried)
//	a reference image the API could not use        invalid input
//	x-should-retry: true|false                     overrides the status
//	otherwise                                      by status (provider.NewError)
func classify(f provider.Failure) *imagegen.ModelError {
	var body errorResponse
	msg := provider.Snippet(f.Body)
	var code, param string
	if json.Unmarshal(f.Body, &body) == nil && body.Error.Message != "" {
		msg = body.Error.Message
		_ = json.Unmarshal(body.Error.Code, &code)
		if body.Error.Param != nil {
			param = *body.Error.Param
		}
	}
	opts := []provider.ErrorOption{provider.Code(strings.TrimSpace(strings.Join([]string{body.Error.Type, code}, " ")))}
	if param != "" {
		opts = append(opts, provider.Code("param="+param))
	}
	switch s := strings.ToLower(f.Header.Get("X-Should-Retry")); s {
	case "true", "false":
		opts = append(opts, provider.Retry(s == "true"))
	}
	switch {
	case code == "moderation_blocked" || code == "content_policy_violation":
		opts = append(opts, provider.Refusal())
	case f.Status == 401 || code == "invalid_api_key" || code == "insufficient_quota" || code == "billing_hard_limit_reached":
		opts = append(opts, provider.OperatorError())
	case f.Status == 400 && (strings.HasPrefix(param, "image") || strings.HasPrefix(code, "invalid_image") || code == "image_too_large"):
		opts = append(opts, provider.InvalidInput("a reference image could not be used by the image provider"))
	}
	return provider.NewError(Provider, f.Status, msg, opts...)
}
