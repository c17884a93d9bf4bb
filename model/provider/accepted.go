package provider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"

	"github.com/imagegen/imagegen"
)

// ErrMaybeAccepted is in the chain of the error Do returns when a
// request that is not safe to send again (a POST that starts a paid
// generation) reached the provider and its answer was lost: a 2xx answer
// whose body was cut short or could not be read, or no answer before the
// HTTP client's own timeout after the request was written. The provider
// may have accepted the request, and charges for it; Do does not send it
// again, since a second POST would start a second generation. The error
// is still Retryable: the service's attempt-level retry decides whether
// the task runs again (a new attempt, counted and bounded by the
// worker), which is the documented cost of an answer lost in transit.
// A route.Fallback does not move on to its next model on it either.
var ErrMaybeAccepted = errors.New("the provider may have accepted the request, but its answer was lost; not sent again")

// replayableKey marks, in a request's context, a request its caller
// declared safe to send again (Replayable).
type replayableKey struct{}

// Replayable returns build with every request it makes marked as safe to
// send again after it reached the server, whatever its method: Do then
// retries it after a 2xx answer cut short, or the HTTP client's own
// timeout, as any other network error, where it would end at once with
// ErrMaybeAccepted. It is for a POST whose repetition does nothing more
// than the first (ComfyUI's POST /upload/image of a file under a fixed
// name, with overwrite), never for one that starts a generation. The
// mark is a context value of the request, for Do's eyes only: nothing of
// it is sent to the server.
func Replayable(build BuildFunc) BuildFunc {
	return func(ctx context.Context) (*http.Request, error) {
		req, err := build(ctx)
		if err != nil {
			return nil, err
		}
		return req.WithContext(context.WithValue(req.Context(), replayableKey{}, true)), nil
	}
}

// replayable reports whether req may be sent again after it reached the
// server: its method is idempotent (GET, HEAD, OPTIONS, TRACE, PUT,
// DELETE), it carries an Idempotency-Key or X-Idempotency-Key header
// that the provider dedupes on (net/http's rule for its own retries of a
// request on a broken keep-alive connection), or its caller marked it so
// (Replayable).
func replayable(req *http.Request) bool {
	if marked, _ := req.Context().Value(replayableKey{}).(bool); marked {
		return true
	}
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	_, key := req.Header["Idempotency-Key"]
	_, xkey := req.Header["X-Idempotency-Key"]
	return key || xkey
}

// traceWritten returns req with a client trace that records whether the
// whole request was written to the connection, and the recorder.
func traceWritten(req *http.Request) (*http.Request, *atomic.Bool) {
	var wrote atomic.Bool
	trace := &httptrace.ClientTrace{WroteRequest: func(i httptrace.WroteRequestInfo) {
		if i.Err == nil {
			wrote.Store(true)
		}
	}}
	return req.WithContext(httptrace.WithClientTrace(req.Context(), trace)), &wrote
}

// lostAfterSend reports whether a transport error of req is an answer
// lost after the request was sent, which must not be sent again: req is
// not replayable, it was written whole, ctx has not ended (Do never
// retries then anyway) and the HTTP client gave up waiting (its Timeout
// or the transport's ResponseHeaderTimeout), where the server may well
// be generating still. Other transport errors (a refused dial, a reset
// before the answer) stay retryable within Do.
func lostAfterSend(ctx context.Context, req *http.Request, wrote *atomic.Bool, err error) bool {
	return !replayable(req) && wrote.Load() && ctx.Err() == nil && isTimeout(err)
}

// maybeAccepted is the error of a non-replayable request whose answer
// was lost after it reached the provider (ErrMaybeAccepted): retryable
// for the service's attempt-level retry, never retried within Do.
func maybeAccepted(provider, what string, err error) *imagegen.ModelError {
	return NetworkError(provider, fmt.Errorf("%w: %s: %w", ErrMaybeAccepted, what, err))
}
