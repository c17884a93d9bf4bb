package gemini

import (
	"strings"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
)

// statusBody is a Google API error (google.rpc.Status as JSON):
// {"error":{"code","message","status","details":[{"@type",...}]}}.
type statusBody struct {
	Error struct {
		Code    int      `json:"code"`
		Message string   `json:"message"`
		Status  string   `json:"status"`
		Details []detail `json:"details"`
	} `json:"error"`
}

// detail holds the fields of the details this adapter reads:
// google.rpc.ErrorInfo (reason) and google.rpc.RetryInfo (retryDelay).
type detail struct {
	Type       string `json:"@type"`
	Reason     string `json:"reason"`
	RetryDelay string `json:"retryDelay"`
}

const (
	typeErrorInfo = "type.googleapis.com/google.rpc.ErrorInfo"
	typeRetryInfo = "type.googleapis.com/google.rpc.RetryInfo"
)

// known reports whether s is a Google API error (for provider.ErrorBody).
func (s statusBody) known() bool { return s.Error.Message != "" || s.Error.Status != "" }

// classify maps a failed answer:
//
//	400 INVALID_ARGUMENT with ErrorInfo reason API_KEY_INVALID  operator error
//	400 FAILED_PRECONDITION (billing, region)                   operator error
//	401, 403 PERMISSION_DENIED, 404 NOT_FOUND (model)            operator error
//	429 RESOURCE_EXHAUSTED, 500, 503, 504                        retryable (RetryInfo honoured)
//	other 400 INVALID_ARGUMENT                                   rejected, not retried
func classify(f provider.Failure) *imagegen.ModelError {
	s, ok := provider.ErrorBody(f.Body, statusBody.known)
	if !ok {
		return provider.NewError(Provider, f.Status, provider.Snippet(f.Body))
	}
	opts := []provider.ErrorOption{provider.Code(s.Error.Status)}
	reason := ""
	for _, d := range s.Error.Details {
		if d.Type == typeErrorInfo && d.Reason != "" {
			reason = d.Reason
			opts = append(opts, provider.Code(d.Reason))
		}
	}
	switch {
	case reason == "API_KEY_INVALID" || reason == "API_KEY_EXPIRED" || reason == "API_KEY_SERVICE_BLOCKED",
		f.Status == 400 && reason == "" && strings.Contains(s.Error.Message, "API key not valid"),
		s.Error.Status == "FAILED_PRECONDITION",
		s.Error.Status == "PERMISSION_DENIED" || s.Error.Status == "UNAUTHENTICATED":
		opts = append(opts, provider.OperatorError())
	}
	return provider.NewError(Provider, f.Status, s.Error.Message, opts...)
}

// retryDelay reads RetryInfo.retryDelay (a google.protobuf.Duration in
// JSON: "38s", "1.5s") from an error body.
func retryDelay(f provider.Failure) (time.Duration, bool) {
	s, ok := provider.ErrorBody(f.Body, statusBody.known)
	if !ok {
		return 0, false
	}
	for _, d := range s.Error.Details {
		if d.Type != typeRetryInfo || !strings.HasSuffix(d.RetryDelay, "s") {
			continue
		}
		if dur, err := time.ParseDuration(d.RetryDelay); err == nil && dur >= 0 {
			return dur, true
		}
	}
	return 0, false
}
