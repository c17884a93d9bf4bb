package bfl

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
)

// errorBody is the API's error form (FastAPI's): {"detail": "text"}, or
// for a 422 {"detail": [{"loc": [...], "msg": "...", "type": "..."}]}.
type errorBody struct {
	Detail json.RawMessage `json:"detail"`
}

func (e errorBody) known() bool { return len(e.Detail) > 0 && string(e.Detail) != "null" }

// text is the detail on one line: the string, or each item's location
// and message.
func (e errorBody) text() string {
	var s string
	if json.Unmarshal(e.Detail, &s) == nil {
		return s
	}
	var items []struct {
		Loc  []any  `json:"loc"`
		Msg  string `json:"msg"`
		Type string `json:"type"`
	}
	if json.Unmarshal(e.Detail, &items) != nil {
		return provider.Snippet(e.Detail)
	}
	parts := make([]string, 0, len(items))
	for _, it := range items {
		loc := make([]string, 0, len(it.Loc))
		for _, l := range it.Loc {
			b, _ := json.Marshal(l)
			loc = append(loc, strings.Trim(string(b), `"`))
		}
		parts = append(parts, strings.Join(loc, ".")+": "+it.Msg+" ("+it.Type+")")
	}
	return strings.Join(parts, "; ")
}

// classify maps a failed answer:
//
//	401, 403 (key), 404 (model)     operator error (provider.NewError)
//	402 (no credits left)           operator error
//	422 naming input_image          invalid input (the reference)
//	429 (too many active tasks)     retryable; Retry-After honoured by Do
//	5xx                             retryable
//	other 4xx                       rejected, not retried
func classify(f provider.Failure) *imagegen.ModelError {
	e, ok := provider.ErrorBody(f.Body, errorBody.known)
	if !ok {
		return provider.NewError(Provider, f.Status, provider.Snippet(f.Body))
	}
	msg := e.text()
	var opts []provider.ErrorOption
	switch {
	case f.Status == http.StatusPaymentRequired:
		opts = append(opts, provider.OperatorError())
	case f.Status == http.StatusUnprocessableEntity && strings.Contains(msg, "input_image"):
		opts = append(opts, provider.InvalidInput("the reference image could not be used by the image provider"))
	}
	return provider.NewError(Provider, f.Status, msg, opts...)
}
