package comfyui

import (
	"encoding/json"
	"net/http"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
)

// errorBody is the answer of a refused POST /prompt:
// {"error": {"type", "message", "details", "extra_info"}, "node_errors": {...}}
// (older servers: "error" a string).
type errorBody struct {
	Error      json.RawMessage `json:"error"`
	NodeErrors json.RawMessage `json:"node_errors"`
}

func (e errorBody) known() bool { return len(e.Error) > 0 && string(e.Error) != "null" }

func (e errorBody) text() string {
	var s string
	if json.Unmarshal(e.Error, &s) != nil {
		var obj struct{ Type, Message, Details string }
		_ = json.Unmarshal(e.Error, &obj)
		s = obj.Message
		if obj.Details != "" {
			s += ": " + obj.Details
		}
		if obj.Type != "" {
			s = obj.Type + ": " + s
		}
	}
	if n := nodeErrors(e.NodeErrors); n != "" {
		s += "; " + n
	}
	return s
}

// classify maps a failed answer:
//
//	400 (a workflow ComfyUI refuses, node_errors)  operator error: the workflow, or a checkpoint the server lacks
//	401, 403 (a proxy's auth), 404 (not ComfyUI)   operator error (provider.NewError)
//	429, 5xx (a proxy, ComfyUI restarting)         retryable
func classify(f provider.Failure) *imagegen.ModelError {
	e, ok := provider.ErrorBody(f.Body, errorBody.known)
	if !ok {
		if f.Status == http.StatusBadRequest {
			return provider.NewError(Provider, f.Status, provider.Snippet(f.Body), provider.OperatorError())
		}
		return provider.NewError(Provider, f.Status, provider.Snippet(f.Body))
	}
	var opts []provider.ErrorOption
	if f.Status == http.StatusBadRequest {
		opts = append(opts, provider.OperatorError())
	}
	return provider.NewError(Provider, f.Status, e.text(), opts...)
}
