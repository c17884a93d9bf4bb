package httpapi

import "net/http"

// routes lists every route of the API in one place.
func (h *Handler) routes() {
	handle := func(pattern string, next http.Handler) {
		h.mux.Handle(pattern, next)
		h.patterns = append(h.patterns, route{pattern, next})
	}
	p := h.cfg.Prefix
	api := func(next http.Handler) http.Handler { return h.authenticate(h.limitRate(next)) }

	// route serves method at path with next, and any other method there
	// with a 405 that names the allowed ones (a GET route answers HEAD too).
	route := func(method, path string, next http.Handler) {
		allow := method
		if method == http.MethodGet {
			allow = "GET, HEAD"
		}
		handle(method+" "+path, next)
		handle(path, methodNotAllowed(allow))
	}

	route("POST", p+"/generate", api(h.handleSubmit()))
	route("GET", p+"/tasks/{task_id}", api(h.handleTask()))

	// Extensions: cancel, listing, balance, ledger, the webhook secret.
	route("POST", p+"/tasks/{task_id}/cancel", api(h.handleCancel()))
	route("GET", p+"/tasks", api(h.handleList()))
	route("GET", p+"/credits", api(h.handleCredits()))
	route("GET", p+"/credits/ledger", api(h.handleLedger()))
	route("GET", p+"/webhook-secret", api(h.handleWebhookSecret()))
	route("POST", p+"/webhook-secret/rotate", api(h.handleRotateWebhookSecret()))

	// Signed, keyless image downloads (so <img> tags work).
	route("GET", p+"/images/{image_id}", h.handleImage())

	// The OpenAPI description of the API (no key needed).
	route("GET", p+"/openapi.json", h.handleOpenAPI())

	// The OpenAI-compatible endpoint, answering in OpenAI's shapes.
	if o := h.cfg.OpenAIPrefix; o != "" {
		handle("POST "+o+"/images/generations", openAIErrors(api(h.handleOpenAIGenerations())))
		handle(o+"/images/generations", openAIErrors(methodNotAllowed("POST")))
		handle("GET "+o+"/models", openAIErrors(api(h.handleOpenAIModels())))
		handle(o+"/models", openAIErrors(methodNotAllowed("GET, HEAD")))
		handle("GET "+o+"/models/{model}", openAIErrors(api(h.handleOpenAIModel())))
		handle(o+"/models/{model}", openAIErrors(methodNotAllowed("GET, HEAD")))
		handle(o+"/", h.openAINotFound())
	}

	handle(p+"/", notFound())
}

// route is one pattern of the API and what serves it (before
// serveObserved).
type route struct {
	pattern string
	handler http.Handler
}
