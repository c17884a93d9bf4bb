package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

// Post returns a BuildFunc that POSTs body with the given Content-Type
// and headers, afresh for every attempt. The header (auth included) is
// copied into each request, never logged.
func Post(url, contentType string, body []byte, header http.Header) BuildFunc {
	return func(ctx context.Context) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		for k, v := range header {
			req.Header[k] = append([]string(nil), v...)
		}
		req.Header.Set("Content-Type", contentType)
		if req.Header.Get("Accept") == "" {
			req.Header.Set("Accept", "application/json")
		}
		return req, nil
	}
}

// Get returns a BuildFunc that GETs url with the given headers (for
// polling a prediction, say), afresh for every attempt.
func Get(url string, header http.Header) BuildFunc {
	return func(ctx context.Context) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
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
