package httpapi

import (
	"net/http"
	"slices"
)

// OpenAIModel is one entry of GET {OpenAIPrefix}/models, in OpenAI's
// Model shape.
type OpenAIModel struct {
	ID      string `json:"id"`
	Object  string `json:"object"` // always "model"
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// OpenAIModelList is the body of GET {OpenAIPrefix}/models, in OpenAI's
// ListModelsResponse shape.
type OpenAIModelList struct {
	Object string        `json:"object"` // always "list"
	Data   []OpenAIModel `json:"data"`
}

// DefaultOpenAIModel is the one id GET {OpenAIPrefix}/models lists when
// Config.OpenAIModels is empty.
const DefaultOpenAIModel = "imagegen"

// openAIModels is what GET {OpenAIPrefix}/models lists: the configured
// models, created when the handler was.
func (h *Handler) openAIModels() []OpenAIModel {
	ids := h.cfg.OpenAIModels
	if len(ids) == 0 {
		ids = []string{DefaultOpenAIModel}
	}
	out := make([]OpenAIModel, len(ids))
	for i, id := range ids {
		out[i] = OpenAIModel{ID: id, Object: "model", Created: h.created.Unix(), OwnedBy: "imagegen"}
	}
	return out
}

// handleOpenAIModels serves GET {OpenAIPrefix}/models, which OpenAI SDKs
// and tools call to learn what a server offers.
func (h *Handler) handleOpenAIModels() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		encode(w, http.StatusOK, OpenAIModelList{Object: "list", Data: h.openAIModels()})
	})
}

// handleOpenAIModel serves GET {OpenAIPrefix}/models/{model}: one of the
// list, or OpenAI's 404 model_not_found.
func (h *Handler) handleOpenAIModel() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("model")
		models := h.openAIModels()
		if i := slices.IndexFunc(models, func(m OpenAIModel) bool { return m.ID == id }); i >= 0 {
			encode(w, http.StatusOK, models[i])
			return
		}
		e := newOpenAIError(http.StatusNotFound, "invalid_request_error", "model", "model_not_found",
			"The model '"+id+"' does not exist")
		e.write(w)
	})
}

// openAINotFound answers a path under the OpenAI prefix that is not
// served, as OpenAI does: a 404 in its error shape.
func (h *Handler) openAINotFound() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		newOpenAIError(http.StatusNotFound, "invalid_request_error", "", "",
			"Invalid URL ("+r.Method+" "+r.URL.Path+"): this server serves POST "+h.cfg.OpenAIPrefix+"/images/generations and GET "+h.cfg.OpenAIPrefix+"/models").write(w)
	})
}
