package httpapi

import "net/http"

// routes lists every route of the API in one place.
func (h *Handler) routes() {
	p := h.cfg.Prefix
	api := func(next http.Handler) http.Handler { return h.authenticate(h.limitRate(next)) }

	h.mux.Handle("POST "+p+"/generate", api(h.idempotent(h.handleSubmit())))
	h.mux.Handle(p+"/generate", methodNotAllowed("POST"))

	h.mux.Handle("GET "+p+"/tasks/{task_id}", api(h.handleTask()))
	h.mux.Handle(p+"/tasks/{task_id}", methodNotAllowed("GET, HEAD"))

	// Extensions: cancel, listing, balance, ledger.
	h.mux.Handle("POST "+p+"/tasks/{task_id}/cancel", api(h.handleCancel()))
	h.mux.Handle(p+"/tasks/{task_id}/cancel", methodNotAllowed("POST"))
	h.mux.Handle("GET "+p+"/tasks", api(h.handleList()))
	h.mux.Handle(p+"/tasks", methodNotAllowed("GET, HEAD"))
	h.mux.Handle("GET "+p+"/credits", api(h.handleCredits()))
	h.mux.Handle(p+"/credits", methodNotAllowed("GET, HEAD"))
	h.mux.Handle("GET "+p+"/credits/ledger", api(h.handleLedger()))
	h.mux.Handle(p+"/credits/ledger", methodNotAllowed("GET, HEAD"))
	h.mux.Handle("GET "+p+"/webhook-secret", api(h.handleWebhookSecret()))
	h.mux.Handle(p+"/webhook-secret", methodNotAllowed("GET, HEAD"))

	// Signed, keyless image downloads (so <img> tags work).
	h.mux.Handle("GET "+p+"/images/{image_id}", h.handleImage())
	h.mux.Handle(p+"/images/{image_id}", methodNotAllowed("GET, HEAD"))

	// The OpenAPI description of the API (no key needed).
	h.mux.Handle("GET "+p+"/openapi.json", h.handleOpenAPI())
	h.mux.Handle(p+"/openapi.json", methodNotAllowed("GET, HEAD"))

	// The OpenAI-compatible endpoint, answering in OpenAI's shapes.
	if o := h.cfg.OpenAIPrefix; o != "" {
		h.mux.Handle("POST "+o+"/images/generations", openAIErrors(api(h.handleOpenAIGenerations())))
		h.mux.Handle(o+"/images/generations", openAIErrors(methodNotAllowed("POST")))
		h.mux.Handle(o+"/images/", openAIErrors(notFound()))
	}

	h.mux.Handle(p+"/", notFound())
}
