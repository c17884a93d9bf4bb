package stability

import (
	"net/http"
	"strings"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
)

// errorBody is Stability's error: {"id","name","errors":["field: message"]};
// the legacy v1 form has "message" instead of "errors".
type errorBody struct {
	ID      string   `json:"id"`
	Name    string   `json:"name"`
	Errors  []string `json:"errors"`
	Message string   `json:"message"`
}

// known reports whether e is a Stability error (for provider.ErrorBody).
func (e errorBody) known() bool { return e.Name != "" || len(e.Errors) > 0 || e.Message != "" }

// User messages of the failures that have their own.
const (
	msgImageRejected = "the reference image could not be used by the image provider"
	msgImageTooLarge = "the reference image is too large for the image provider"
	msgLanguage      = "the image provider accepts prompts in English only"
)

// rateLimitPenalty is how long Stability times a caller out after a
// 429 (Stability's API reference): the wait when the answer names no
// Retry-After.
const rateLimitPenalty = 60 * time.Second

// classify maps a failed answer (the errors of Stability's API
// reference):
//
//	400 bad_request                      rejected, not retried; invalid input when
//	                                     an errors[] entry names the image field
//	401 unauthorized                     operator error (bad or missing key)
//	402 payment_required                 operator error (no credits left)
//	403 content_moderation               refused ("you were not charged")
//	403 other                            operator error
//	404 not_found, generation_not_found  operator error (a wrong endpoint or model)
//	413 payload too large                invalid input (the init image)
//	422 invalid_language                 rejected: English-only prompt
//	422 other                            rejected, not retried
//	429 rate_limit_exceeded              retried after Retry-After, else 60 s
//	500 internal_error, other 5xx        retried
func classify(f provider.Failure) *imagegen.ModelError {
	e, ok := provider.ErrorBody(f.Body, errorBody.known)
	if !ok {
		if f.Status == http.StatusRequestEntityTooLarge {
			return provider.NewError(Provider, f.Status, provider.Snippet(f.Body), provider.InvalidInput(msgImageTooLarge))
		}
		return provider.NewError(Provider, f.Status, provider.Snippet(f.Body))
	}
	msg := strings.Join(e.Errors, "; ")
	if msg == "" {
		msg = e.Message
	}
	opts := []provider.ErrorOption{provider.Code(e.Name)}
	if e.ID != "" && e.ID != e.Name {
		opts = append(opts, provider.Code("id="+e.ID))
	}
	switch {
	case e.Name == "content_moderation":
		opts = append(opts, provider.Refusal())
	case f.Status == http.StatusUnauthorized || e.Name == "unauthorized" || f.Status == http.StatusPaymentRequired || e.Name == "payment_required":
		opts = append(opts, provider.OperatorError())
	case f.Status == http.StatusRequestEntityTooLarge:
		opts = append(opts, provider.InvalidInput(msgImageTooLarge))
	case e.Name == "invalid_language":
		opts = append(opts, provider.UserMessage(msgLanguage))
	case f.Status == http.StatusBadRequest && namesImage(e.Errors):
		opts = append(opts, provider.InvalidInput(msgImageRejected))
	}
	return provider.NewError(Provider, f.Status, msg, opts...)
}

// namesImage reports whether an errors[] entry ("field: message") is
// about the image field.
func namesImage(errs []string) bool {
	for _, s := range errs {
		if field, _, ok := strings.Cut(s, ":"); ok && strings.TrimSpace(field) == "image" {
			return true
		}
	}
	return false
}

// retryDelay is the wait after a 429 that named no Retry-After: the
// documented 60 s penalty, so that retries do not extend it.
func retryDelay(f provider.Failure) (time.Duration, bool) {
	if f.Status == http.StatusTooManyRequests {
		return rateLimitPenalty, true
	}
	return 0, false
}
