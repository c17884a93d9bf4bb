package fal

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
)

// errorBody holds the fields of fal's failure bodies that classify
// reads: request errors {"detail": "<text>", "error_type": "<kind>"},
// model errors {"detail": [{"loc", "msg", "type", "ctx"}]} (FastAPI),
// and cancel answers {"status": "ALREADY_COMPLETED" | "NOT_FOUND"}.
type errorBody struct {
	Detail    json.RawMessage `json:"detail"`
	ErrorType string          `json:"error_type"`
	Status    string          `json:"status"`
}

type modelError struct {
	Loc  []any  `json:"loc"`
	Msg  string `json:"msg"`
	Type string `json:"type"`
}

// typeContentPolicy is the model error type of a content refusal (fal's
// Model Errors reference).
const typeContentPolicy = "content_policy_violation"

// classify maps a failed answer:
//
//	model error of type content_policy_violation   refused (never retried)
//	401, 403 (bad key, no access), 404 (app)       operator error
//	422 validation, 400 bad_request, 499           rejected, not retried
//	429, 500, 502, 503, 504                        retryable (Retry-After honoured)
//	request_timeout, startup_timeout               retryable, "did not answer in time"
//	X-Fal-Retryable: true|false                    overrides the status
//	x-fal-request-timeout-type: user               not retried (our own timeout)
//
// fal's own words (detail, error_type, loc) go to the logged cause only.
func classify(f provider.Failure) *imagegen.ModelError {
	msg := provider.Snippet(f.Body)
	var body errorBody
	var types []string
	if json.Unmarshal(f.Body, &body) == nil {
		var text string
		var items []modelError
		switch {
		case json.Unmarshal(body.Detail, &text) == nil && text != "":
			msg = text
		case json.Unmarshal(body.Detail, &items) == nil && len(items) > 0:
			parts := make([]string, 0, len(items))
			for _, it := range items {
				parts = append(parts, fmt.Sprintf("%s: %s", loc(it.Loc), it.Msg))
				if it.Type != "" && !slices.Contains(types, it.Type) {
					types = append(types, it.Type)
				}
			}
			msg = strings.Join(parts, "; ")
		}
	}
	errType := cmp.Or(body.ErrorType, f.Header.Get("X-Fal-Error-Type"))
	opts := []provider.ErrorOption{provider.Code(errType), provider.Code(strings.Join(types, " ")), provider.Code(body.Status)}
	switch strings.ToLower(f.Header.Get("X-Fal-Retryable")) {
	case "true":
		opts = append(opts, provider.Retry(true))
	case "false":
		opts = append(opts, provider.Retry(false))
	}
	if strings.EqualFold(f.Header.Get("X-Fal-Request-Timeout-Type"), "user") {
		opts = append(opts, provider.Retry(false))
	}
	switch {
	case slices.Contains(types, typeContentPolicy):
		opts = append(opts, provider.Refusal())
	case errType == "request_timeout" || errType == "startup_timeout":
		opts = append(opts, provider.UserMessage(provider.MsgTimeout))
	}
	return provider.NewError(Provider, f.Status, msg, opts...)
}

// loc is a FastAPI error location, "body.num_images".
func loc(l []any) string {
	s := make([]string, len(l))
	for i, v := range l {
		s[i] = fmt.Sprint(v)
	}
	return strings.Join(s, ".")
}
