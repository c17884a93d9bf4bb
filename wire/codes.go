package wire

import "github.com/imagegen/imagegen"

// APIErrorCode is the machine-readable code of an error answer of the
// HTTP API, the error.code of {"error":{"code","message"}}. Package
// httpapi writes these codes and package client reads them; both map
// them to the sentinel errors of package imagegen through Sentinel, so
// the two sides of the wire share one vocabulary.
type APIErrorCode string

// The error codes of the API. The first six are the interface's own; the
// others name conditions it leaves open (an unknown path, a wrong method,
// a body over the limit) and those of the extensions.
const (
	APIUnauthorized        APIErrorCode = "unauthorized"           // 401: missing or invalid API key
	APIInsufficientCredits APIErrorCode = "insufficient_credits"   // 403: the balance does not cover the charge
	APITaskNotFound        APIErrorCode = "task_not_found"         // 404: no such task of the caller
	APIInvalidParams       APIErrorCode = "invalid_params"         // 422: the request failed validation
	APIRateLimitExceeded   APIErrorCode = "rate_limit_exceeded"    // 429: too many requests (Retry-After says when)
	APIInternalError       APIErrorCode = "internal_error"         // 500: the server's fault
	APINotFound            APIErrorCode = "not_found"              // 404: no such endpoint, or an image link that is bad or expired
	APIMethodNotAllowed    APIErrorCode = "method_not_allowed"     // 405: wrong method (Allow lists the right ones)
	APIRequestTooLarge     APIErrorCode = "request_too_large"      // 413: body over the limit
	APIIdempotencyKeyInUse APIErrorCode = "idempotency_key_in_use" // 409: the first request with the key is still running
	APITaskAlreadyFinished APIErrorCode = "task_already_finished"  // 409: cancel of a task that has ended
	APIPreconditionFailed  APIErrorCode = "precondition_failed"    // 412: an image download's If-Match or If-Unmodified-Since failed
	APIRangeNotSatisfiable APIErrorCode = "range_not_satisfiable"  // 416: no range of an image download's Range overlaps the image
	APIStorageUnavailable  APIErrorCode = "storage_unavailable"    // 503: the image store failed or is busy (Retry-After says when)
	APIStorageTimeout      APIErrorCode = "storage_timeout"        // 504: the image store did not answer in time (Retry-After says when)
)

// Sentinel returns the sentinel error that code stands for, or nil for a
// code without one (internal_error, not_found, …).
func (c APIErrorCode) Sentinel() error {
	switch c {
	case APIUnauthorized:
		return imagegen.ErrUnauthorized
	case APIInsufficientCredits:
		return imagegen.ErrInsufficientCredits
	case APITaskNotFound:
		return imagegen.ErrTaskNotFound
	case APIInvalidParams:
		return imagegen.ErrInvalidParams
	case APIRateLimitExceeded:
		return imagegen.ErrRateLimited
	case APITaskAlreadyFinished:
		return imagegen.ErrInvalidTransition
	case APIIdempotencyKeyInUse:
		return imagegen.ErrIdempotencyKeyInUse
	}
	return nil
}
