package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// Post returns a BuildFunc that POSTs body with the given Content-Type
// and headers, afresh for every attempt. The header (auth included) is
// copied into each request, never logged.
func Post(url, contentType string, body []byte, header http.Header) BuildFunc {
	h := header.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Set("Content-Type", contentType)
	return build(http.MethodPost, url, body, h)
}

// Get returns a BuildFunc that GETs url with the given headers (for
// polling a prediction, say), afresh for every attempt.
func Get(url string, header http.Header) BuildFunc {
	return build(http.MethodGet, url, nil, header)
}

// Put returns a BuildFunc for a PUT without a body (fal's queue cancel,
// say), afresh for every attempt.
func Put(url string, header http.Header) BuildFunc {
	return build(http.MethodPut, url, nil, header)
}

// build makes each attempt's request: method, url, a fresh reader of
// body (nil for none), a copy of header, and Accept: application/json
// unless header says otherwise.
func build(method, url string, body []byte, header http.Header) BuildFunc {
	return func(ctx context.Context) (*http.Request, error) {
		var r io.Reader
		if body != nil {
			r = bytes.NewReader(body)
		}
		req, err := http.NewRequestWithContext(ctx, method, url, r)
		if err != nil {
			return nil, err
		}
		for k, v := range header {
			req.Header[k] = append([]string(nil), v...)
		}
		if req.Header.Get("Accept") == "" {
			req.Header.Set("Accept", "application/json")
		}
		return req, nil
	}
}

// PostJSON returns a BuildFunc that POSTs v encoded as JSON.
func PostJSON(url string, v any, header http.Header) (BuildFunc, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding the request: %w", err)
	}
	return Post(url, "application/json", body, header), nil
}

// DecodeJSON decodes a 2xx answer's body into v. A body that is not the
// expected JSON is a retryable BadAnswer (a proxy's page, a cut answer)
// whose logged cause quotes the body's start, with the keys of the
// Client that got the answer redacted.
func DecodeJSON(provider string, resp *Response, v any) error {
	if err := json.Unmarshal(resp.Body, v); err != nil {
		head := string(resp.Body[:min(len(resp.Body), 4096)])
		if resp.redact != nil {
			head = resp.redact(head) // a page that echoes the request may hold the key; redacted before it is cut
		}
		return BadAnswer(provider, true, fmt.Errorf("decoding the answer (%q): %w", Snippet([]byte(head[:min(len(head), 200)])), err))
	}
	return nil
}
