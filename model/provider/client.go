package provider

import (
	"context"
	"net/http"
	"time"
)

// Client is what an adapter keeps of its configuration: the resolved
// settings and retry policy, with the API key held behind a pointer to
// the string, where neither fmt (whatever the verb or nesting), log/slog
// nor encoding/json reach it. An adapter whose Model holds a *Client,
// and not its Config, can be printed and logged safely.
type Client struct {
	Provider string
	BaseURL  string // without a trailing slash
	Cost     int64
	HTTP     *http.Client
	// Policy is Config.Policy (retries, clock and key redaction) with
	// the Classify and RetryDelay of the adapter's Defaults.
	Policy Policy
	// MaxDuration is Config.MaxDuration: see Bound.
	MaxDuration time.Duration
	key         *Secret
}

// NewClient takes c over: it resolves *c with the adapter's defaults
// (Config.Resolve), zeroes *c, so that the adapter's own Config, which
// embeds it, no longer holds the key, and returns the client, or an
// error naming the bad field.
func NewClient(c *Config, d Defaults) (*Client, error) {
	rc, err := c.Resolve(d)
	*c = Config{}
	if err != nil {
		return nil, err
	}
	key := rc.APIKey
	policy := rc.Policy(d.Provider)
	policy.Classify = d.Classify
	policy.RetryDelay = d.RetryDelay
	return &Client{
		Provider:    d.Provider,
		BaseURL:     rc.BaseURL,
		Cost:        rc.Cost,
		HTTP:        rc.HTTPClient,
		Policy:      policy,
		MaxDuration: rc.MaxDuration,
		key:         &key,
	}, nil
}

// Key returns the API key; call Reveal on it only to set the auth header.
func (c *Client) Key() Secret { return *c.key }

// URL joins the base URL and a path that starts with "/".
func (c *Client) URL(path string) string { return c.BaseURL + path }

// Do is Do with the client's HTTP client and policy.
func (c *Client) Do(ctx context.Context, build BuildFunc) (*Response, error) {
	return Do(ctx, c.HTTP, build, c.Policy)
}

// DoOnce is Do with one attempt and no retry: for best-effort calls
// (a progress read) and for those made after the generation gave up (a
// cancel), where waiting to try again is not worth it.
func (c *Client) DoOnce(ctx context.Context, build BuildFunc) (*Response, error) {
	p := c.Policy
	p.MaxRetries = 0
	return Do(ctx, c.HTTP, build, p)
}

// Bound returns ctx, bounded by c.MaxDuration when it has no deadline,
// and the function that releases it. Every adapter calls it first in
// Generate, so that a caller without a deadline cannot hold a call (an
// answer ContextBoundHTTPClient sets no timeout on, a job polled that
// never ends), and the server's work, for ever. A ctx with a deadline
// is returned as it is.
func (c *Client) Bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok || c.MaxDuration <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, c.MaxDuration)
}
