// Package fetch is the guarded fetcher for image URLs that users give
// (image_input): every model that needs the bytes of a reference image
// gets them through it, never through a plain HTTP client.
//
// Guards: http and https only, no credentials in the URL, no proxy, at
// most MaxRedirects redirects (each target checked again), a timeout for
// the whole fetch, a minimum transfer rate (MinRate, after MinRateGrace),
// a byte limit (on Content-Length and on the read), a
// pixel limit checked on the image header before the image is decoded,
// and an SSRF guard: the fetcher resolves the host itself, checks every
// address at connect time (loopback, private, link-local including cloud
// metadata, Azure's platform endpoint 168.63.129.16, unique-local, CGNAT,
// multicast, broadcast, unspecified,
// documentation and reserved ranges are refused, in IPv4, IPv6 and
// IPv4-mapped forms, and any IPv6 address outside the global unicast
// space 2000::/3 but NAT64's) and
// connects to the checked address, so a second DNS answer (rebinding)
// cannot slip past; a host with IPv4 and IPv6 addresses is tried on both
// families, the second 300 ms after the first, as net.Dialer does. A host refused whatever DNS answers (an IP literal in
// any spelling, localhost names: Config.RefusedHost) is refused before
// any lookup; services ask RefusedHost when a URL is given, so that such
// a URL is refused then rather than when it is fetched. AllowPrivate
// turns the address check off for development; AllowHosts exempts named
// hosts (such as a provider's CDN).
//
// Errors wrap the package's sentinels (errors.Is) and their messages are
// safe to show to the user who gave the URL.
package fetch

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"
)

// ImageFetcher downloads an image a user named by URL: the one interface
// through which models get reference images. *Fetcher (the SSRF guard,
// size and time limits) is one; models take this interface so that they
// never fetch user URLs with a plain HTTP client, and tests can script
// it.
type ImageFetcher interface {
	Fetch(ctx context.Context, url string) (data []byte, contentType string, err error)
}

var _ ImageFetcher = (*Fetcher)(nil)

// Resolver looks up a host's addresses; *net.Resolver is one.
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

// The default limits of what a Fetcher decodes (Config.MaxPixels and
// Config.MaxDecodedBytes).
const (
	DefaultMaxPixels       = 40_000_000
	DefaultMaxDecodedBytes = 4 * DefaultMaxPixels
)

// Config configures a Fetcher. Zero values take the defaults; negative
// values are refused.
type Config struct {
	MaxBytes  int64 // largest body accepted; default 20 MiB
	MaxPixels int64 // largest width*height decoded; default DefaultMaxPixels
	// MaxDecodedBytes is the most memory one decoded image may take
	// (width*height*bytes a pixel, read from the header before decoding):
	// default 4*MaxPixels (DefaultMaxDecodedBytes with the default
	// MaxPixels), so any 8-bit image within MaxPixels fits and a 16-bit
	// PNG (8 bytes a pixel) may have half as many pixels. An interlaced
	// PNG counts twice (image/png decodes each pass into an image of its
	// own before merging it), so an interlaced 8-bit RGBA one may have
	// half as many pixels too.
	MaxDecodedBytes int64
	Timeout         time.Duration // the whole fetch, redirects included; default 15s
	MaxRedirects    int           // redirects followed; default 3
	// MinRate is the slowest a download may be, in bytes a second: by
	// MinRateGrace + n/MinRate after the request began, n bytes of the
	// body must have arrived, or Fetch fails with ErrTooSlow. It cuts off
	// hosts that drip bytes long before Timeout. Default 16 KiB/s.
	MinRate int64
	// MinRateGrace is the head start before MinRate applies (connecting,
	// the headers, the first bytes); default 5s.
	MinRateGrace time.Duration
	AllowPrivate bool     // development only: connect to any address
	AllowHosts   []string // host names exempt from the address check (still http(s) only)
	UserAgent    string   // default "imagegen-fetch/1"
	Resolver     Resolver // default net.DefaultResolver
	// Dial connects to an address that passed the guard (an IP literal
	// and port). Default (&net.Dialer{Timeout: 5s}).DialContext; tests
	// inject one.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

func (o Config) validate() error {
	return cmp.Or( // the first negative field
		nonNegative("MaxBytes", o.MaxBytes),
		nonNegative("MaxDecodedBytes", o.MaxDecodedBytes),
		nonNegative("MaxPixels", o.MaxPixels),
		nonNegative("Timeout", o.Timeout),
		nonNegative("MinRate", o.MinRate),
		nonNegative("MinRateGrace", o.MinRateGrace),
		nonNegative("MaxRedirects", o.MaxRedirects),
	)
}

// nonNegative returns an error naming the Config field when v < 0.
func nonNegative[T ~int | ~int64](field string, v T) error {
	if v < 0 {
		return fmt.Errorf("fetch: Config.%s must not be negative (got %v)", field, v)
	}
	return nil
}

func (o Config) withDefaults() Config {
	o.MaxBytes = cmp.Or(o.MaxBytes, 20<<20)
	o.MaxPixels = cmp.Or(o.MaxPixels, DefaultMaxPixels)
	o.MaxDecodedBytes = cmp.Or(o.MaxDecodedBytes, 4*o.MaxPixels)
	o.Timeout = cmp.Or(o.Timeout, 15*time.Second)
	o.MaxRedirects = cmp.Or(o.MaxRedirects, 3)
	o.MinRate = cmp.Or(o.MinRate, 16<<10)
	o.MinRateGrace = cmp.Or(o.MinRateGrace, 5*time.Second)
	o.UserAgent = cmp.Or(o.UserAgent, "imagegen-fetch/1")
	if o.Resolver == nil {
		o.Resolver = net.DefaultResolver
	}
	if o.Dial == nil {
		o.Dial = (&net.Dialer{Timeout: 5 * time.Second}).DialContext
	}
	hosts := make([]string, len(o.AllowHosts))
	for i, h := range o.AllowHosts {
		hosts[i] = strings.ToLower(strings.TrimSuffix(h, "."))
	}
	o.AllowHosts = hosts
	return o
}

// Fetcher downloads user-given URLs under the guards. It is safe for
// concurrent use.
type Fetcher struct {
	o           Config
	client      *http.Client // follows checked redirects
	noRedirects *http.Client // same transport, for Post
}

// New returns a Fetcher, or an error naming a bad option.
func New(o Config) (*Fetcher, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	f := &Fetcher{o: o.withDefaults()}
	transport := &http.Transport{
		Proxy:                  nil, // never through a proxy: the guard must see the real peer
		DialContext:            f.dial,
		ForceAttemptHTTP2:      true, // a custom DialContext turns it off otherwise
		TLSHandshakeTimeout:    5 * time.Second,
		MaxResponseHeaderBytes: 64 << 10,
		MaxIdleConns:           16,
		IdleConnTimeout:        30 * time.Second,
	}
	f.client = &http.Client{Transport: transport, CheckRedirect: f.checkRedirect}
	f.noRedirects = &http.Client{
		Transport:     transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return f, nil
}
