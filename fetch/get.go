package fetch

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// checkURL accepts absolute http(s) URLs with a host and no credentials.
func checkURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return ErrBadURL
	}
	return checkParsed(u)
}

func checkParsed(u *url.URL) error {
	if (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil {
		return ErrBadURL
	}
	return nil
}

// checkRedirect is the client's CheckRedirect: at most MaxRedirects
// hops, each to an http(s) URL. The address of each target is checked
// when the transport dials it.
func (f *Fetcher) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > f.o.MaxRedirects {
		return ErrTooManyRedirects
	}
	if err := checkParsed(req.URL); err != nil {
		return fmt.Errorf("redirect: %w", err)
	}
	return nil
}

// Fetch downloads rawURL under the guards and returns its bytes and
// Content-Type. It fails with ErrTooSlow when the host falls behind
// Config.MinRate, and with a context.DeadlineExceeded error after
// Config.Timeout.
func (f *Fetcher) Fetch(ctx context.Context, rawURL string) (data []byte, contentType string, err error) {
	if err := checkURL(rawURL); err != nil {
		return nil, "", err
	}
	ctx, cancelCause := context.WithCancelCause(ctx)
	defer cancelCause(nil)
	ctx, cancel := context.WithTimeout(ctx, f.o.Timeout)
	defer cancel()
	guard, stopGuard := guardRate(cancelCause, f.o.MinRateGrace, f.o.MinRate)
	defer stopGuard()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, "", fmt.Errorf("%w", ErrBadURL)
	}
	req.Header.Set("User-Agent", f.o.UserAgent)
	req.Header.Set("Accept", "image/png, image/jpeg, image/gif, image/*;q=0.8")
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, "", failure(ctx, err, "connection failed")
	}
	defer resp.Body.Close()
	defer closeWhenDone(ctx, resp.Body)()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		return nil, "", &StatusError{Code: resp.StatusCode}
	}
	if resp.ContentLength > f.o.MaxBytes {
		return nil, "", fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, resp.ContentLength, f.o.MaxBytes)
	}
	data, err = io.ReadAll(io.LimitReader(guard.reader(resp.Body), f.o.MaxBytes+1))
	if err != nil {
		return nil, "", failure(ctx, err, "transfer failed")
	}
	if int64(len(data)) > f.o.MaxBytes {
		return nil, "", fmt.Errorf("%w: more than %d bytes", ErrTooLarge, f.o.MaxBytes)
	}
	return data, resp.Header.Get("Content-Type"), nil
}

// closeWhenDone closes body when ctx ends, so that no read of it outlives
// the fetch's timeout; the returned func stops that. net/http ends a read
// of a body when the request's context ends, except for a 101 Switching
// Protocols answer: its body is the connection itself, handed over to
// the caller, and a host that answers 101 and then sends nothing held
// Post and Fetch (a webhook delivery, a worker's image fetch) for as
// long as it kept the connection open.
func closeWhenDone(ctx context.Context, body io.Closer) (stop func() bool) {
	return context.AfterFunc(ctx, func() { _ = body.Close() })
}
