package provider

import (
	"cmp"
	"net/http"
	"time"

	"github.com/imagegen/imagegen"
)

// Default bounds of a Policy.
const (
	DefaultBaseDelay     = time.Second
	DefaultMaxDelay      = 30 * time.Second
	DefaultMaxRetryAfter = 2 * time.Minute
	DefaultMaxBodyBytes  = 64 << 20 // base64 images are large
	maxFailureBody       = 64 << 10
)

// Policy says how Do retries one kind of call. Config.Policy gives one
// with the config's retries, clock and key; NewClient adds the adapter's
// Classify and, when its errors carry a delay in the body, RetryDelay.
type Policy struct {
	Provider string // names the provider in errors
	// MaxRetries is how many times a retryable failure is tried again:
	// 0 means none (Config.Policy fills it from Config.MaxRetries).
	MaxRetries int
	Clock      imagegen.Clock // times the waits; nil means imagegen.SystemClock
	// BaseDelay and MaxDelay shape the backoff when the provider gives no
	// delay: BaseDelay doubled per retry, capped at MaxDelay, the upper
	// half jittered. Defaults 1 s and 30 s.
	BaseDelay, MaxDelay time.Duration
	// MaxRetryAfter is the longest wait a provider may ask for
	// (Retry-After and the like); when it asks for more, Do gives up at
	// once with a retryable error, leaving the retry to the task queue.
	// Default 2 minutes.
	MaxRetryAfter time.Duration
	// MaxBodyBytes bounds a successful answer's body. Default 64 MiB.
	MaxBodyBytes int64
	// Classify turns a non-2xx answer into the error Do returns; its
	// Retryable field decides whether Do tries again. Default:
	// DefaultClassify.
	Classify func(Failure) *imagegen.ModelError
	// RetryDelay reads a delay the provider put in the answer beyond the
	// standard headers (Google's RetryInfo.retryDelay). Optional.
	RetryDelay func(Failure) (time.Duration, bool)
	// Redact removes secrets from failure bodies and transport errors
	// before anything else sees them (see Redactor). Optional.
	Redact func(string) string
}

// Failure is a non-2xx answer as Do read it: its status, headers, and at
// most the first 64 KiB of its body with the policy's secrets redacted.
type Failure struct {
	Status int
	Header http.Header
	Body   []byte
}

// Response is a 2xx answer, its body read whole.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
	redact func(string) string // the policy's, for text of the body that goes into errors
}

// DefaultClassify maps a failure by its status alone (see NewError),
// with the start of the body as the provider's message.
func DefaultClassify(provider string) func(Failure) *imagegen.ModelError {
	return func(f Failure) *imagegen.ModelError {
		return NewError(provider, f.Status, Snippet(f.Body))
	}
}

// Snippet is the start of a body, on one line, for a logged cause.
func Snippet(body []byte) string {
	const max = 512
	s := []rune(string(body))
	if len(s) > max {
		s = append(s[:max], '…')
	}
	for i, r := range s {
		if r == '\n' || r == '\r' || r == '\t' {
			s[i] = ' '
		}
	}
	return string(s)
}

func (p Policy) withDefaults() Policy {
	p.Provider = cmp.Or(p.Provider, "provider")
	if p.Clock == nil {
		p.Clock = imagegen.SystemClock{}
	}
	p.MaxRetries = max(p.MaxRetries, 0)
	p.BaseDelay = cmp.Or(p.BaseDelay, DefaultBaseDelay)
	p.MaxDelay = cmp.Or(p.MaxDelay, DefaultMaxDelay)
	p.MaxRetryAfter = cmp.Or(p.MaxRetryAfter, DefaultMaxRetryAfter)
	p.MaxBodyBytes = cmp.Or(p.MaxBodyBytes, DefaultMaxBodyBytes)
	if p.Redact == nil {
		p.Redact = func(s string) string { return s }
	}
	if p.Classify == nil {
		p.Classify = DefaultClassify(p.Provider)
	}
	return p
}
