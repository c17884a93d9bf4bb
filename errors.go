package imagegen

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors. Check them with errors.Is; every error the service
// returns for one of these conditions wraps the matching sentinel.
var (
	// ErrUnauthorized: the API key is missing, malformed, unknown or revoked.
	ErrUnauthorized = errors.New("imagegen: unauthorized")
	// ErrInsufficientCredits: the balance does not cover the charge.
	ErrInsufficientCredits = errors.New("imagegen: insufficient credits")
	// ErrTaskNotFound: the task does not exist or belongs to another user.
	ErrTaskNotFound = errors.New("imagegen: task not found")
	// ErrInvalidParams: the request failed validation. *ValidationError wraps it.
	ErrInvalidParams = errors.New("imagegen: invalid params")
	// ErrRateLimited: the caller exceeded its request rate.
	ErrRateLimited = errors.New("imagegen: rate limit exceeded")
	// ErrQueueFull: the owner already has as many pending tasks as
	// Config.MaxPending allows; nothing was charged.
	ErrQueueFull = errors.New("imagegen: queue full")
	// ErrNoTask: no task is ready to be claimed right now.
	ErrNoTask = errors.New("imagegen: no task ready")
	// ErrLeaseLost: the caller no longer holds the task (its lease ran
	// out and the task was recovered, another worker claimed it, or it
	// already finished), or, from Store.RenewLease, its lease has ended;
	// see Store.ClaimTask.
	ErrLeaseLost = errors.New("imagegen: lease lost")
	// ErrInvalidTransition: the task is not in a state that allows the change.
	ErrInvalidTransition = errors.New("imagegen: invalid task transition")
	// ErrDuplicateEntry: a ledger entry with the same owner and reference exists.
	ErrDuplicateEntry = errors.New("imagegen: duplicate ledger entry")
	// ErrKeyNotFound: no API key matches (or it belongs to another user).
	ErrKeyNotFound = errors.New("imagegen: api key not found")
	// ErrKeyExists: a key with the same hash is already stored.
	ErrKeyExists = errors.New("imagegen: api key exists")
	// ErrImageNotFound: the image does not exist or has expired.
	ErrImageNotFound = errors.New("imagegen: image not found")
	// ErrSessionNotFound: no live console session has the id.
	ErrSessionNotFound = errors.New("imagegen: session not found")
	// ErrBlobNotFound: a BlobStore holds nothing under the key.
	ErrBlobNotFound = errors.New("imagegen: blob not found")
	// ErrInvalidBlobKey: a blob key breaks the rules of CheckBlobKey.
	ErrInvalidBlobKey = errors.New("imagegen: invalid blob key")
	// ErrBlobSize: a blob's reader gave more or fewer bytes than announced.
	ErrBlobSize = errors.New("imagegen: blob size mismatch")
	// ErrBlobTimeout: a BlobStore call did not answer within
	// Config.BlobTimeout (the error also wraps the store's own).
	ErrBlobTimeout = errors.New("imagegen: the blob store did not answer in time")
	// ErrOutcomeUnknown: a store call failed after it was sent, and the
	// store could not settle what became of it: its write may still
	// land after the call returned (a transaction that may yet commit),
	// so a lookup cannot tell yet whether it did. A CreateTask error
	// wrapping it keeps an idempotency key in flight
	// (SubmitIdempotent) rather than looking for the task, until a
	// retry after its in-flight time settles it.
	ErrOutcomeUnknown = errors.New("imagegen: the store cannot tell yet whether the write was made")
)

// ValidationError reports a request that breaks a rule of the interface.
// It names the offending field; errors.Is(err, ErrInvalidParams) holds.
type ValidationError struct {
	Field   string // JSON field name, or "" for the body as a whole
	Message string // what is wrong, for the client
}

func (e *ValidationError) Error() string {
	if e.Field == "" {
		return e.Message
	}
	return e.Field + ": " + e.Message
}

// Unwrap lets errors.Is(err, ErrInvalidParams) match.
func (e *ValidationError) Unwrap() error { return ErrInvalidParams }

func invalid(field, format string, args ...any) *ValidationError {
	return &ValidationError{Field: field, Message: fmt.Sprintf(format, args...)}
}

// ModelError is the one error type every Model returns for a failed
// generation, whatever the provider.
type ModelError struct {
	Provider  string // e.g. "openai", "placeholder"
	Retryable bool   // a later attempt may succeed (rate limit, 5xx, timeout)
	Refused   bool   // the provider refused the content; never retried
	// InvalidInput: the request's reference images could not be used
	// (unreachable, too large, not an image); the task fails with
	// CodeInvalidImageInput. Set Retryable false with it.
	InvalidInput bool
	// Misconfigured: the operator must fix the provider's setup (a bad or
	// revoked API key, no access to the model, no billing). Not retried
	// on the same provider; a fallback chain moves on to the next one.
	Misconfigured bool
	// RetryAfter is how long the provider asked to wait before another
	// call (a 429's Retry-After), when it did: the service then pauses
	// the model's starts that long for every worker on the store, and
	// retries the task no sooner (both at most MaxModelPause).
	RetryAfter time.Duration
	// Message is safe to show to the user: no provider internals, no keys.
	// When empty, a generic message is shown.
	Message string
	Err     error // the underlying cause, for logs only
}

func (e *ModelError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = "generation failed"
	}
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Provider, msg, e.Err)
	}
	return e.Provider + ": " + msg
}

func (e *ModelError) Unwrap() error { return e.Err }

// UserMessage is the failure reason shown in the task's error field.
func (e *ModelError) UserMessage() string {
	switch {
	case e.Refused && e.Message != "":
		return "refused by content policy: " + e.Message
	case e.Refused:
		return "refused by content policy"
	case e.Message != "":
		return e.Message
	default:
		return "image generation failed"
	}
}
