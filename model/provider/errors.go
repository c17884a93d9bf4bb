package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/imagegen/imagegen"
)

// User-facing messages (ModelError.Message), shared so that every
// adapter words the same failure alike. None names a provider's
// internals; the provider's own words go to ModelError.Err, for logs.
const (
	MsgUnavailable   = "the image provider is unavailable, please retry later"
	MsgBusy          = "the image provider is busy, please retry later"
	MsgTimeout       = "the image provider did not answer in time, please retry later"
	MsgRejected      = "the image provider rejected the request"
	MsgMisconfigured = "the image service is misconfigured"
	MsgRefused       = "the prompt or image was rejected by the provider's safety system"
	MsgBadAnswer     = "the image provider sent an answer that could not be used"
)

// ErrorOption adjusts what NewError builds; the options are the
// functions below.
type ErrorOption struct {
	apply func(*imagegen.ModelError, *errorNote)
}

type errorNote struct {
	code  string
	cause error
}

// Refusal marks a content refusal: Refused, never retried, with
// MsgRefused or msg when given.
func Refusal(msg ...string) ErrorOption {
	return ErrorOption{func(e *imagegen.ModelError, _ *errorNote) {
		e.Refused, e.Retryable, e.InvalidInput, e.Misconfigured = true, false, false, false
		e.Message = MsgRefused
		if len(msg) > 0 && msg[0] != "" {
			e.Message = msg[0]
		}
	}}
}

// OperatorError marks a failure the operator must fix (a bad or revoked
// API key, no access to the model, no billing): not retried, and the
// user reads MsgMisconfigured, not blame. ModelError.Misconfigured is
// set, so a fallback chain moves on to another provider.
func OperatorError() ErrorOption {
	return ErrorOption{func(e *imagegen.ModelError, n *errorNote) {
		e.Refused, e.Retryable, e.InvalidInput, e.Misconfigured = false, false, false, true
		e.Message = MsgMisconfigured
		n.code = strings.TrimSpace("operator error " + n.code)
	}}
}

// InvalidInput marks a failure caused by the request's reference images
// (the provider could not use them): not retried, and the task fails as
// invalid input. msg tells the user which input and why, safely.
func InvalidInput(msg string) ErrorOption {
	return ErrorOption{func(e *imagegen.ModelError, _ *errorNote) {
		e.Refused, e.Retryable, e.InvalidInput, e.Misconfigured = false, false, true, false
		e.Message = msg
	}}
}

// Retry overrides whether the failure may be retried (for example from
// a provider's x-should-retry header or an error code).
func Retry(retryable bool) ErrorOption {
	return ErrorOption{func(e *imagegen.ModelError, _ *errorNote) {
		if !e.Refused {
			e.Retryable = retryable
		}
	}}
}

// UserMessage sets the message shown to the user. It must be safe: no
// provider internals, no keys.
func UserMessage(msg string) ErrorOption {
	return ErrorOption{func(e *imagegen.ModelError, _ *errorNote) { e.Message = msg }}
}

// Code names the provider's error code or type in the logged cause.
func Code(code string) ErrorOption {
	return ErrorOption{func(_ *imagegen.ModelError, n *errorNote) {
		if code != "" {
			n.code = strings.TrimSpace(n.code + " " + code)
		}
	}}
}

// Cause wraps err in the logged cause (errors.Is and errors.As see it).
func Cause(err error) ErrorOption {
	return ErrorOption{func(_ *imagegen.ModelError, n *errorNote) { n.cause = err }}
}

// NewError turns a provider's failed answer into the one error type of
// imagegen. By status, before opts:
//
//	408, 429, 5xx         retryable; MsgBusy for 429, else MsgUnavailable
//	401, 403, 404         operator error (key, access, model name): not retryable, MsgMisconfigured
//	any other             not retryable, MsgRejected
//
// Refused is set only by the Refusal option. The cause (Err) reads
// "HTTP <status> [<code>]: <providerMessage>", for operator logs; the
// user reads only Message. Use NetworkError when there was no answer.
func NewError(provider string, status int, providerMessage string, opts ...ErrorOption) *imagegen.ModelError {
	e := &imagegen.ModelError{Provider: provider}
	n := &errorNote{}
	switch {
	case status == http.StatusTooManyRequests:
		e.Retryable, e.Message = true, MsgBusy
	case status == http.StatusRequestTimeout || status >= 500:
		e.Retryable, e.Message = true, MsgUnavailable
	case status == http.StatusUnauthorized || status == http.StatusForbidden || status == http.StatusNotFound:
		OperatorError().apply(e, n)
	default:
		e.Message = MsgRejected
	}
	for _, o := range opts {
		if o.apply != nil {
			o.apply(e, n)
		}
	}
	head := fmt.Sprintf("HTTP %d", status)
	if n.code != "" {
		head += " (" + n.code + ")"
	}
	msg := strings.TrimSpace(providerMessage)
	if msg == "" {
		msg = http.StatusText(status)
	}
	if n.cause != nil {
		e.Err = fmt.Errorf("%s: %s: %w", head, msg, n.cause)
	} else {
		e.Err = errors.New(head + ": " + msg)
	}
	return e
}

// ErrorBody decodes a failed answer's body as the provider's JSON error
// form T, for a Classify. It reports false when the body is not JSON or
// when known says the decoded value is not that form (a proxy's page,
// an empty object); Classify then falls back on NewError with the
// body's Snippet. known is typically a method expression, such as
// errorBody.known.
func ErrorBody[T any](body []byte, known func(T) bool) (T, bool) {
	var v T
	if json.Unmarshal(body, &v) != nil || !known(v) {
		return v, false
	}
	return v, true
}

// NetworkError is a call that got no answer: a transport error, or the
// context ending. It is retryable; a deadline reads MsgTimeout. err stays
// in the chain, so errors.Is(e, context.DeadlineExceeded) works.
func NetworkError(provider string, err error) *imagegen.ModelError {
	msg := MsgUnavailable
	if errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
		msg = MsgTimeout
	}
	return &imagegen.ModelError{Provider: provider, Retryable: true, Message: msg, Err: fmt.Errorf("no answer: %w", err)}
}

// BadAnswer is a 2xx answer the adapter cannot use (not JSON, no image,
// an image it cannot decode). retryable says whether another call may
// do better.
func BadAnswer(provider string, retryable bool, err error) *imagegen.ModelError {
	return &imagegen.ModelError{Provider: provider, Retryable: retryable, Message: MsgBadAnswer, Err: err}
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// Unfinished is the error of a provider's job still running when the
// context ended, or would end before the next poll (ErrPastDeadline):
// retryable, and a deadline reads MsgTimeout and is
// context.DeadlineExceeded. job says which and where it stood
// ("request 1a2b still IN_QUEUE"), for the logged cause.
func Unfinished(provider, job string, err error) *imagegen.ModelError {
	msg := MsgUnavailable
	if errors.Is(err, ErrPastDeadline) {
		err = fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		msg = MsgTimeout
	}
	return &imagegen.ModelError{Provider: provider, Retryable: true, Message: msg, Err: fmt.Errorf("%s: %w", job, err)}
}
