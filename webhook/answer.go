package webhook

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/imagegen/imagegen/internal/retry"
)

// AnswerPoster is a Poster that also returns the answer's headers, so
// that the dispatcher can honour a receiver's Retry-After on 429 and 503
// (see Config.MaxBackoff). *fetch.Fetcher is one. With a Poster that is
// not, Retry-After is not seen and every failed attempt waits its
// backoff.
type AnswerPoster interface {
	Poster
	PostAnswer(ctx context.Context, url string, header http.Header, body []byte) (status int, answer http.Header, err error)
}

// post sends one attempt through the configured Poster, with the
// answer's headers when it is an AnswerPoster.
func (d *Dispatcher) post(ctx context.Context, url string, header http.Header, body []byte) (int, http.Header, error) {
	if p, ok := d.cfg.Poster.(AnswerPoster); ok {
		return p.PostAnswer(ctx, url, header, body)
	}
	status, err := d.cfg.Poster.Post(ctx, url, header, body)
	return status, nil, err
}

// answerError is a receiver's answer other than 2xx; retryAfter is the
// wait it asked for with a usable Retry-After on 429 or 503 (ok).
type answerError struct {
	status     int
	retryAfter time.Duration
	ok         bool
}

func (e *answerError) Error() string { return fmt.Sprintf("receiver answered %d", e.status) }

// newAnswerError reads the Retry-After of a 429 or 503 answer (seconds,
// or an HTTP date relative to now; retry.After, which also reads the
// Retry-After-Ms some services send); on any other status, or when it is
// missing, malformed or negative, the answer asks for nothing.
func newAnswerError(status int, answer http.Header, now time.Time) *answerError {
	e := &answerError{status: status}
	if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
		e.retryAfter, e.ok = retry.After(answer, now)
	}
	return e
}

// retryDelay is the wait before the next attempt after the given number
// of failed attempts, the last of which was answered e (nil when it was
// not answered): its backoff, or what the receiver asked for
// (answerError.retryAfter) when that is longer, never more than
// MaxBackoff.
func (d *Dispatcher) retryDelay(failed int, e *answerError) time.Duration {
	delay := d.backoff(failed)
	if e != nil && e.ok {
		delay = min(max(delay, e.retryAfter), d.cfg.MaxBackoff)
	}
	return delay
}
