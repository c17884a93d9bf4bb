package provider

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/imagegen/imagegen"
)

// BuildFunc makes a fresh request for one attempt, bound to ctx. It is
// called again for every retry, so a body can be sent again.
type BuildFunc func(ctx context.Context) (*http.Request, error)

// Do sends the request that build makes until it succeeds, fails in a
// way that is not retryable, or runs out of retries, and returns the 2xx
// answer with its body read. Every failure is a *imagegen.ModelError:
//
//   - a non-2xx answer is classified by p.Classify (default
//     DefaultClassify: 408, 429 and 5xx are retryable); Do retries when
//     the error says Retryable;
//   - a transport error, or a 2xx body cut short, is retryable
//     (NetworkError), unless ctx itself has ended; but a request that
//     is not safe to send again (a POST without an Idempotency-Key,
//     not marked Replayable) is not sent again once it reached the provider and
//     its answer was lost (a 2xx body cut short, or the HTTP client's
//     own timeout after it was written): that error wraps
//     ErrMaybeAccepted and ends Do, since a second POST would be a
//     second paid generation;
//   - between attempts Do waits on p.Clock for the delay the provider
//     asked for (retry-after-ms, Retry-After, then p.RetryDelay), else
//     for an exponential backoff with jitter;
//   - it never waits past ctx's deadline: when the wait would end after
//     it, or the provider asks for more than p.MaxRetryAfter, Do returns
//     the last (retryable) error at once.
//
// At most 1+p.MaxRetries attempts are made.
func Do(ctx context.Context, client *http.Client, build BuildFunc, p Policy) (*Response, error) {
	if client == nil {
		return nil, &imagegen.ModelError{Provider: p.Provider, Misconfigured: true, Message: MsgMisconfigured, Err: errors.New("no HTTP client")}
	}
	p = p.withDefaults()
	for retry := 0; ; retry++ {
		resp, fail, err, final := attempt(ctx, client, build, p)
		if err == nil {
			return resp, nil
		}
		if final || !err.Retryable || retry >= p.MaxRetries || ctx.Err() != nil {
			return nil, err
		}
		delay, asked := p.delay(retry, fail)
		if asked && delay > p.MaxRetryAfter {
			return nil, stopped(err, fmt.Errorf("the provider asked to wait %v, more than %v", delay, p.MaxRetryAfter))
		}
		if werr := Wait(ctx, p.Clock, delay); werr != nil {
			return nil, stopped(err, werr)
		}
	}
}

// attempt makes one call. fail is set when the answer was not 2xx;
// final, when the call must not be made again (ErrMaybeAccepted).
func attempt(ctx context.Context, client *http.Client, build BuildFunc, p Policy) (_ *Response, _ *Failure, _ *imagegen.ModelError, final bool) {
	req, err := build(ctx)
	if err != nil {
		return nil, nil, &imagegen.ModelError{Provider: p.Provider, Misconfigured: true, Message: MsgMisconfigured, Err: fmt.Errorf("building the request: %w", redactError(err, p.Redact))}, false
	}
	req, wrote := traceWritten(req)
	resp, err := client.Do(req)
	if err != nil {
		if lostAfterSend(ctx, req, wrote, err) {
			return nil, nil, maybeAccepted(p.Provider, "no answer after the request was sent", redactError(err, p.Redact)), true
		}
		return nil, nil, NetworkError(p.Provider, redactError(err, p.Redact)), false
	}
	defer resp.Body.Close()
	defer closeWhenDone(req.Context(), resp)()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxFailureBody))
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxFailureBody))
		f := &Failure{Status: resp.StatusCode, Header: resp.Header, Body: []byte(p.Redact(string(body)))}
		e := p.Classify(*f)
		if e == nil { // a classifier must not let a failure pass
			e = DefaultClassify(p.Provider)(*f)
		}
		if f.Status == http.StatusTooManyRequests && e.RetryAfter == 0 {
			if d, asked := p.askedDelay(f); asked {
				e.RetryAfter = d // the service pauses the model for every worker
			}
		}
		return nil, f, e, false
	}
	if resp.ContentLength > p.MaxBodyBytes {
		return nil, nil, BadAnswer(p.Provider, false, fmt.Errorf("answer of %d bytes, more than %d", resp.ContentLength, p.MaxBodyBytes)), false
	}
	body, err := readAnswer(resp.Body, resp.ContentLength, p.MaxBodyBytes)
	if err != nil {
		if !replayable(req) && ctx.Err() == nil {
			return nil, nil, maybeAccepted(p.Provider, fmt.Sprintf("reading its HTTP %d answer", resp.StatusCode), redactError(err, p.Redact)), true
		}
		return nil, nil, NetworkError(p.Provider, fmt.Errorf("reading the answer: %w", redactError(err, p.Redact))), false
	}
	if int64(len(body)) > p.MaxBodyBytes {
		return nil, nil, BadAnswer(p.Provider, false, fmt.Errorf("answer of more than %d bytes", p.MaxBodyBytes)), false
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: body, redact: p.Redact}, nil, nil, false
}

// readAnswer reads an answer's body, at most limit+1 bytes. With a
// Content-Length it reads into one buffer of that size, where io.ReadAll
// would grow its buffer by copies to up to twice a large picture's size;
// a body of another length is still read whole, up to the limit.
func readAnswer(r io.Reader, contentLength, limit int64) ([]byte, error) {
	r = io.LimitReader(r, limit+1)
	if contentLength < 0 || contentLength > limit {
		return io.ReadAll(r)
	}
	buf := bytes.NewBuffer(make([]byte, 0, contentLength+bytes.MinRead)) // ReadFrom needs MinRead free to see the end
	_, err := buf.ReadFrom(r)
	return buf.Bytes(), err
}

// delay is the wait before retry number retry, and whether the provider
// asked for it.
func (p Policy) delay(retry int, f *Failure) (time.Duration, bool) {
	if f != nil {
		if d, ok := p.askedDelay(f); ok {
			return d, true
		}
	}
	return Backoff(retry, p.BaseDelay, p.MaxDelay), false
}

// askedDelay is the wait f asks for: its Retry-After header, else the
// delay the adapter reads from its body (RetryDelay: Gemini's RetryInfo).
func (p Policy) askedDelay(f *Failure) (time.Duration, bool) {
	if d, ok := RetryAfter(f.Header, p.Clock.Now()); ok {
		return d, true
	}
	if p.RetryDelay != nil {
		if d, ok := p.RetryDelay(*f); ok && d >= 0 {
			return d, true
		}
	}
	return 0, false
}

// stopped is last, retryable still, with why Do did not try again added
// to its logged cause.
func stopped(last *imagegen.ModelError, why error) *imagegen.ModelError {
	e := *last
	if last.Err == nil {
		e.Err = fmt.Errorf("not retried: %w", why)
	} else {
		e.Err = fmt.Errorf("%w (not retried: %w)", last.Err, why)
	}
	return &e
}

// closeWhenDone closes resp's body when ctx, the request's context,
// ends, so that no read of it outlives that context (the call's, unless
// the build gave the request one that outlives it: Replicate's create,
// which must learn the id of a prediction it may have to cancel), and
// at once when resp is a 101 Switching Protocols (its body is the
// connection, not an answer); the returned func stops the watch. net/http ends a read of a body when the
// request's context ends, except for a 101's: handed over to the
// caller, the connection is no longer the transport's, and a provider
// (or a proxy before it) that answered 101 and then sent nothing held
// Do, reading what it took for a failure's body, and with it the
// worker and the task's lease, for as long as it kept the connection
// open, the generation's deadline and the client's Timeout both passed.
// fetch's Fetch and Post do the same for the URLs they fetch.
func closeWhenDone(ctx context.Context, resp *http.Response) (stop func() bool) {
	if resp.StatusCode == http.StatusSwitchingProtocols {
		_ = resp.Body.Close()
	}
	return context.AfterFunc(ctx, func() { _ = resp.Body.Close() })
}
