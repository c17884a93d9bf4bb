package fetch

import (
	"bytes"
	"context"
	"io"
	"net/http"
)

// Post sends body to rawURL under the same guards as Fetch (scheme,
// SSRF check at connect, no proxy, timeout) but follows no redirect: a
// 3xx answer is returned as it is. It returns the status code; the
// answer's body is read (up to 64 KiB, within the timeout) and dropped.
// Webhook deliveries use it.
func (f *Fetcher) Post(ctx context.Context, rawURL string, header http.Header, body []byte) (int, error) {
	status, _, err := f.PostAnswer(ctx, rawURL, header, body)
	return status, err
}

// PostAnswer is Post that also returns the answer's headers (such as a
// Retry-After, which webhook deliveries honour on 429 and 503).
func (f *Fetcher) PostAnswer(ctx context.Context, rawURL string, header http.Header, body []byte) (int, http.Header, error) {
	if err := checkURL(rawURL); err != nil {
		return 0, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, f.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rawURL, bytes.NewReader(body))
	if err != nil {
		return 0, nil, ErrBadURL
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("User-Agent", f.o.UserAgent)
	resp, err := f.noRedirects.Do(req)
	if err != nil {
		return 0, nil, failure(ctx, err, "connection failed")
	}
	defer resp.Body.Close()
	defer closeWhenDone(ctx, resp.Body)()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, resp.Header, nil
}
