package provider

import (
	"cmp"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/weburl"
)

// DefaultMaxRetries is how many times a failed call is retried when
// Config.MaxRetries is 0.
const DefaultMaxRetries = 3

// maxMaxRetries bounds Config.MaxRetries, so a typo cannot loop for long.
const maxMaxRetries = 10

// DefaultMaxDuration bounds one Generate whose context has no deadline
// (Config.MaxDuration). The service always gives a deadline, its
// GenerateTimeout.
const DefaultMaxDuration = 30 * time.Minute

// Config holds what every adapter needs. Adapters embed it in their own
// Config; Resolve fills the defaults and checks it. Adapters never read
// environment variables: the program that starts them does.
type Config struct {
	// HTTPClient sends the requests. Default: the adapter's
	// Defaults.HTTPClient, else DefaultHTTPClient().
	// An injected client is used as is (its redirect policy included:
	// custom auth headers survive cross-host redirects in net/http).
	HTTPClient *http.Client
	// BaseURL is the API root, such as "https://api.openai.com/v1";
	// tests point it at a fake server. Default: the adapter's.
	BaseURL string
	// APIKey authenticates the calls. Required, unless the adapter's
	// server is self-hosted (Defaults.SelfHosted), often without auth.
	APIKey Secret
	// Cost is the price of one generation in credits, 1 to 3.
	// Default: the adapter's.
	Cost int64
	// MaxRetries is how many times a call that failed in a retryable way
	// (408, 429, 5xx, network errors) is tried again within one
	// Generate. 0 means DefaultMaxRetries (3); a negative value means
	// none; at most 10.
	MaxRetries int
	// Clock times the waits between retries. Default imagegen.SystemClock.
	Clock imagegen.Clock
	// MaxDuration bounds one Generate whose context has no deadline:
	// the call of an adapter whose generation call is bounded by the
	// context alone (its default HTTP client is ContextBoundHTTPClient,
	// which sets no timeout on the answer of its own: a1111, openai,
	// stability, gemini), the polls of one that submits and then polls
	// (bfl, fal, replicate, comfyui); see the package doc's Timeouts. A
	// context with a deadline is used as it is. Default
	// DefaultMaxDuration (30 min).
	MaxDuration time.Duration
}

// Defaults are an adapter's values for the fields left empty, and the
// hooks its client's Policy gets.
type Defaults struct {
	Provider string // names the adapter in errors, e.g. "openai"
	BaseURL  string
	Cost     int64
	// SelfHosted, for a server of the operator's own (ComfyUI, an sdapi
	// server), says what its address is, for the error when
	// Config.BaseURL is empty ("the sdapi server's address, e.g.
	// http://127.0.0.1:7860"): such an adapter has no default BaseURL,
	// so Config.BaseURL is required, and Config.APIKey may be empty (the
	// server may take no key).
	SelfHosted string
	// Classify and RetryDelay become Policy.Classify and
	// Policy.RetryDelay of the client NewClient returns.
	Classify   func(Failure) *imagegen.ModelError
	RetryDelay func(Failure) (time.Duration, bool)
	// HTTPClient makes the client used when Config.HTTPClient is nil.
	// Default DefaultHTTPClient. An adapter whose generation call lasts
	// as long as the generation (an sdapi server's txt2img, OpenAI's,
	// Stability's and Gemini's generation calls answer when the image is
	// done) takes ContextBoundHTTPClient, so that the context, the
	// service's GenerateTimeout, bounds the call and not a shorter
	// client timeout, and calls Client.Bound first in Generate (see the
	// package doc's Timeouts).
	HTTPClient func() *http.Client
}

// Resolve returns c with defaults filled in, or an error naming the bad
// field ("openai: Config.Cost must be 1 to 3 (got 7)").
func (c Config) Resolve(d Defaults) (Config, error) {
	if d.SelfHosted != "" && c.BaseURL == "" {
		return Config{}, fmt.Errorf("%s: Config.BaseURL is required (%s)", d.Provider, d.SelfHosted)
	}
	c.BaseURL = strings.TrimRight(cmp.Or(c.BaseURL, d.BaseURL), "/")
	c.Cost = cmp.Or(c.Cost, d.Cost, imagegen.MinCost)
	switch {
	case c.MaxRetries == 0:
		c.MaxRetries = DefaultMaxRetries
	case c.MaxRetries < 0:
		c.MaxRetries = 0
	}
	if c.HTTPClient == nil && d.HTTPClient != nil {
		c.HTTPClient = d.HTTPClient()
	}
	if c.HTTPClient == nil {
		c.HTTPClient = DefaultHTTPClient()
	}
	if c.Clock == nil {
		c.Clock = imagegen.SystemClock{}
	}
	if c.MaxDuration == 0 {
		c.MaxDuration = DefaultMaxDuration
	}
	if err := c.validate(d.SelfHosted != ""); err != nil {
		return Config{}, fmt.Errorf("%s: %w", d.Provider, err)
	}
	return c, nil
}

func (c Config) validate(keyOptional bool) error {
	if c.APIKey.IsZero() && !keyOptional {
		return fmt.Errorf("Config.APIKey is required")
	}
	if strings.ContainsAny(c.APIKey.Reveal(), "\r\n") {
		return fmt.Errorf("Config.APIKey must be one line")
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("Config.BaseURL must be an absolute http(s) URL without credentials, query or fragment (got %s)", weburl.Shown(c.BaseURL))
	}
	if c.Cost < imagegen.MinCost || c.Cost > imagegen.MaxCost {
		return fmt.Errorf("Config.Cost must be %d to %d (got %d)", imagegen.MinCost, imagegen.MaxCost, c.Cost)
	}
	if c.MaxRetries > maxMaxRetries {
		return fmt.Errorf("Config.MaxRetries must be at most %d (got %d)", maxMaxRetries, c.MaxRetries)
	}
	if c.MaxDuration < 0 {
		return fmt.Errorf("Config.MaxDuration must not be negative (got %v)", c.MaxDuration)
	}
	return nil
}

// Policy returns the retry policy of a resolved config: its retries and
// clock, and its key redacted from every error. NewClient adds the
// adapter's Classify and RetryDelay.
func (c Config) Policy(provider string) Policy {
	return Policy{
		Provider:   provider,
		MaxRetries: c.MaxRetries,
		Clock:      c.Clock,
		Redact:     Redactor(c.APIKey),
	}
}

// URL joins the base URL and a path that starts with "/".
func (c Config) URL(path string) string { return c.BaseURL + path }

// DefaultHTTPClient returns a new client for provider APIs: connect and
// TLS handshakes bounded to 10 s, an answer's headers within 3 minutes
// (image models are slow), the whole call within 4 minutes, and no
// redirects (a provider API does not redirect, and following one would
// send the key elsewhere). It never returns http.DefaultClient.
func DefaultHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	t.TLSHandshakeTimeout = 10 * time.Second
	t.ResponseHeaderTimeout = 3 * time.Minute
	t.ExpectContinueTimeout = time.Second
	t.MaxIdleConnsPerHost = 16
	return &http.Client{
		Transport: t,
		Timeout:   4 * time.Minute,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// ContextBoundHTTPClient is DefaultHTTPClient without its bounds on the
// answer (no ResponseHeaderTimeout, no Client.Timeout): connect and TLS
// handshakes are still bounded to 10 s, and the context of each call
// bounds the rest. It is for servers that answer a generation only when
// it is done (an sdapi server's txt2img), whose call may rightly last as
// long as the service's GenerateTimeout, which an operator raises above
// DefaultHTTPClient's 3 minutes for slow GPUs: a shorter client timeout
// would cut the call while the server still generates. The adapter must
// then bound a context that has no deadline itself (Client.Bound,
// Config.MaxDuration).
func ContextBoundHTTPClient() *http.Client {
	c := DefaultHTTPClient()
	c.Transport.(*http.Transport).ResponseHeaderTimeout = 0
	c.Timeout = 0
	return c
}
