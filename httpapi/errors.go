package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/wire"
)

func writeError(w http.ResponseWriter, status int, code wire.APIErrorCode, message string) {
	encode(w, status, wire.ErrorBody{Error: wire.ErrorDetail{Code: code, Message: message}})
}

// respondErr is the one place that maps errors to statuses and codes.
func (h *Handler) respondErr(w http.ResponseWriter, r *http.Request, err error) {
	var ve *imagegen.ValidationError
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &ve):
		writeError(w, http.StatusUnprocessableEntity, wire.APIInvalidParams, ve.Error())
	case errors.Is(err, imagegen.ErrInvalidParams):
		writeError(w, http.StatusUnprocessableEntity, wire.APIInvalidParams, "invalid request parameters")
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, wire.APIRequestTooLarge, "request body must be at most 1 MiB")
	case errors.Is(err, imagegen.ErrUnauthorized):
		writeError(w, http.StatusUnauthorized, wire.APIUnauthorized, "missing or invalid API key")
	case errors.Is(err, imagegen.ErrInsufficientCredits):
		writeError(w, http.StatusForbidden, wire.APIInsufficientCredits, "not enough credits for this generation")
	case errors.Is(err, imagegen.ErrQueueFull):
		writeRateLimited(w, imagegen.QueueFullRetryAfter, imagegen.QueueFullMessage)
	case errors.Is(err, imagegen.ErrTaskNotFound):
		writeError(w, http.StatusNotFound, wire.APITaskNotFound, "task not found")
	case errors.Is(err, imagegen.ErrIdempotencyKeyInUse):
		writeError(w, http.StatusConflict, wire.APIIdempotencyKeyInUse, "a request with this Idempotency-Key is still in progress; retry later")
	case errors.Is(err, imagegen.ErrInvalidTransition):
		writeError(w, http.StatusConflict, wire.APITaskAlreadyFinished, "the task has already finished; it was not changed")
	case callerGone(r):
		w.WriteHeader(statusClientClosed)
	default:
		h.cfg.Logger.ErrorContext(r.Context(), "request failed", "method", r.Method, "route", r.Pattern,
			"request_id", requestIDOf(r.Context()), "err", err)
		writeError(w, http.StatusInternalServerError, wire.APIInternalError, "internal server error")
	}
}

// statusClientClosed is the status of a request whose caller
// hung up before its answer (nginx's 499): a long poll given up by a
// client's own timeout, or any request whose store call the hang-up
// cut short. Nobody reads it, so it has no body; the request's line and
// the Observer see it, so that a client's hang-up is never counted, or
// logged, as a server error.
const statusClientClosed = 499

// callerGone reports whether r's caller hung up (net/http cancels the
// request's context then). A deadline a host app set is not a hang-up:
// that error stays the server's.
func callerGone(r *http.Request) bool {
	return errors.Is(r.Context().Err(), context.Canceled)
}

func writeRateLimited(w http.ResponseWriter, retryAfter time.Duration, message string) {
	w.Header().Set("Retry-After", strconv.FormatInt(RetryAfterSeconds(retryAfter), 10))
	writeError(w, http.StatusTooManyRequests, wire.APIRateLimitExceeded, message)
}

// RetryAfterSeconds is the Retry-After value (whole seconds) for a
// limiter's RetryAfter: rounded up, so that a client that waits that long
// is not refused again, and at least 1. The console's pages use it too.
func RetryAfterSeconds(d time.Duration) int64 {
	s := int64((d + time.Second - 1) / time.Second)
	return max(s, 1)
}

func notFound() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, wire.APINotFound, "no such endpoint: "+r.URL.Path)
	})
}

func methodNotAllowed(allow string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		writeError(w, http.StatusMethodNotAllowed, wire.APIMethodNotAllowed, "method "+r.Method+" is not allowed here; use "+allow)
	})
}
