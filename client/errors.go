package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/retry"
	"github.com/imagegen/imagegen/wire"
)

// ErrTaskFailed is wrapped by Task.Err for a task whose status is failed.
var ErrTaskFailed = errors.New("client: task failed")

// ErrTooLarge is wrapped by the error of Download for an image larger
// than the client accepts (WithMaxDownload).
var ErrTooLarge = errors.New("client: image too large")

// ErrIdempotencyKeyInUse is wrapped by the error of SubmitWithKey when
// the server is still handling an earlier request with the same
// idempotency key (409 idempotency_key_in_use). Retry later with the same
// key and request: the answer will be that of the first request. It is
// imagegen.ErrIdempotencyKeyInUse.
var ErrIdempotencyKeyInUse = imagegen.ErrIdempotencyKeyInUse

// APIError is an answer of the API with an error status (docs/api.md, "Errors").
//
// Unwrap maps Code to the sentinel errors of package imagegen, as
// wire.APIErrorCode.Sentinel does for the server: unauthorized to
// ErrUnauthorized, insufficient_credits to ErrInsufficientCredits,
// task_not_found to ErrTaskNotFound, invalid_params to ErrInvalidParams,
// rate_limit_exceeded to ErrRateLimited, (Cancel) task_already_finished
// to ErrInvalidTransition, and (SubmitWithKey) idempotency_key_in_use to
// ErrIdempotencyKeyInUse. A failed image download (404) wraps
// ErrImageNotFound. Other codes (internal_error, not_found, …) wrap
// nothing.
type APIError struct {
	StatusCode int    // HTTP status, e.g. 403
	Code       string // error.code, e.g. "insufficient_credits"; "" if the body was not the API's error shape
	Message    string // error.message, as the server wrote it
	// RetryAfter is the server's Retry-After (on 429), or 0.
	RetryAfter time.Duration
	// Replayed: the server answered with the stored answer of an earlier
	// request with the same idempotency key (SubmitWithKey), as its
	// "Idempotent-Replayed: true" header says. The server keeps only
	// created tasks for a key, so an error is Replayed only when an
	// earlier server version kept its refusal of the body.
	Replayed bool

	// sentinel overrides the mapping of Code (Download's ErrImageNotFound).
	sentinel error
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "imagegen api: %d", e.StatusCode)
	if e.Code != "" {
		b.WriteString(" " + e.Code)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, " (retry after %v)", e.RetryAfter)
	}
	if e.Replayed {
		b.WriteString(" (replayed for the idempotency key)")
	}
	return b.String()
}

// Unwrap returns the imagegen sentinel error for e.Code, or nil.
func (e *APIError) Unwrap() error {
	if e.sentinel != nil {
		return e.sentinel
	}
	return wire.APIErrorCode(e.Code).Sentinel()
}

// maxErrorMessage bounds the message kept from a body that is not the
// API's error shape (an HTML page of a proxy, say).
const maxErrorMessage = 200

// newAPIError reads an error answer: the API's {"error":{"code","message"}}
// body, or failing that the start of the body or the status text.
func newAPIError(status int, header http.Header, body []byte, now time.Time) *APIError {
	e := &APIError{StatusCode: status}
	var shape wire.ErrorBody
	if json.Unmarshal(body, &shape) == nil && shape.Error.Code != "" {
		e.Code, e.Message = string(shape.Error.Code), shape.Error.Message
	} else {
		e.Message = plainMessage(body, status)
	}
	if status == http.StatusTooManyRequests {
		e.RetryAfter, _ = retry.After(header, now)
	}
	e.Replayed = header.Get("Idempotent-Replayed") == "true"
	return e
}

func plainMessage(body []byte, status int) string {
	msg := strings.TrimSpace(string(body))
	if !utf8.ValidString(msg) || msg == "" {
		return http.StatusText(status)
	}
	if len(msg) > maxErrorMessage {
		msg = strings.ToValidUTF8(msg[:maxErrorMessage], "") + "…"
	}
	return msg
}
