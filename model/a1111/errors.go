package a1111

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
)

// errorBody is the server's error form: its API middleware's
// {"error": "<exception>", "detail": "...", "body": "...", "errors": "..."},
// or FastAPI's {"detail": "..."} (a 401 of --api-auth, a 404) and
// {"detail": [{"loc", "msg", "type"}]} (a 422).
type errorBody struct {
	Error  string          `json:"error"`
	Detail json.RawMessage `json:"detail"`
	Errors string          `json:"errors"`
}

func (e errorBody) known() bool {
	return e.Error != "" || e.Errors != "" || len(e.Detail) > 0 && string(e.Detail) != "null"
}

func (e errorBody) text() string {
	var parts []string
	for _, s := range []string{e.Error, detail(e.Detail), e.Errors} {
		if s != "" && !slices.Contains(parts, s) {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, ": ")
}

// detail is a FastAPI detail on one line.
func detail(raw json.RawMessage) string {
	var s string
	if len(raw) == 0 || json.Unmarshal(raw, &s) == nil {
		return s
	}
	return provider.Snippet(raw)
}

// classify maps a failed answer:
//
//	401, 403 (--api-auth), 404       operator error (provider.NewError)
//	422 (a request the server refuses) rejected, not retried
//	500 (the generation raised: out of memory, a broken checkpoint)  retryable
//	502, 503, 504 (a proxy, the server restarting)  retryable
func classify(f provider.Failure) *imagegen.ModelError {
	e, ok := provider.ErrorBody(f.Body, errorBody.known)
	if !ok {
		return provider.NewError(Provider, f.Status, provider.Snippet(f.Body))
	}
	return provider.NewError(Provider, f.Status, e.text(), provider.Code(e.Error))
}
