// Package fetch is the guarded fetcher for image URLs that users give
// (image_input): every model that needs the bytes of a reference image
// gets them through it, never through a plain HTTP client.
//
// Guards: http and https only, no credentials in the URL, no proxy, at
// most MaxRedirects redirects (each target checked again), a timeout for
// the whole fetch, a byte limit, a pixel limit checked on the image
// header before the image is decoded, and an SSRF guard: the host is
// resolved by the fetcher itself and every address is checked at connect
// time (loopback, private, link-local including cloud metadata,
// unique-local, CGNAT, multicast, broadcast, unspecified and reserved
// ranges are refused), and the connection goes to the checked address,
// so a second DNS answer (rebinding) cannot slip past. AllowPrivate turns
// the address check off for development; AllowHosts exempts named hosts
// (such as a provider's CDN).
package fetch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"
)

// Errors; check them with errors.Is. Their messages are safe to show.
var (
	ErrBadURL           = errors.New("not an absolute http(s) URL without credentials")
	ErrBlockedAddress   = errors.New("address not allowed")
	ErrTooLarge         = errors.New("too large")
	ErrTooManyPixels    = errors.New("too many pixels")
	ErrNotImage         = errors.New("not a supported image (PNG, JPEG or GIF)")
	ErrTooManyRedirects = errors.New("too many redirects")
	ErrStatus           = errors.New("unexpected HTTP status")
)

// Resolver looks up a host's addresses; *net.Resolver is one.
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

// Options configures a Fetcher. Zero values take the defaults.
type Options struct {
	MaxBytes     int64         // default 20 MiB
	MaxPixels    int64         // default 40 million
	Timeout      time.Duration // whole fetch, redirects included; default 15s
	MaxRedirects int           // default 3; a negative value allows none
	AllowPrivate bool          // development only: allow any address
	AllowHosts   []string      // hosts exempt from the address check
	UserAgent    string        // default "imagegen-fetch/1"
	Resolver     Resolver      // default net.DefaultResolver
	// Dial connects to a checked address; tests inject one. Default
	// (&net.Dialer{Timeout: 5s}).DialContext.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// Fetcher downloads user-given URLs under the guards. It is safe for
// concurrent use.
type Fetcher struct {
	o           Options
	client      *http.Client
	noRedirects *http.Client // same transport, for Post
}

// New returns a Fetcher, or an error naming a bad option.
func New(o Options) (*Fetcher, error) {
	switch {
	case o.MaxBytes < 0:
		return nil, fmt.Errorf("fetch: Options.MaxBytes must not be negative (got %d)", o.MaxBytes)
	case o.MaxPixels < 0:
		return nil, fmt.Errorf("fetch: Options.MaxPixels must not be negative (got %d)", o.MaxPixels)
	case o.Timeout < 0:
		return nil, fmt.Errorf("fetch: Options.Timeout must not be negative (got %v)", o.Timeout)
	}
	o.MaxBytes = cmp.Or(o.MaxBytes, 20<<20)
	o.MaxPixels = cmp.Or(o.MaxPixels, 40_000_000)
	o.Timeout = cmp.Or(o.Timeout, 15*time.Second)
	switch {
	case o.MaxRedirects == 0:
		o.MaxRedirects = 3
	case o.MaxRedirects < 0:
		o.MaxRedirects = 0
	}
	o.UserAgent = cmp.Or(o.UserAgent, "imagegen-fetch/1")
	if o.Resolver == nil {
		o.Resolver = net.DefaultResolver
	}
	if o.Dial == nil {
		o.Dial = (&net.Dialer{Timeout: 5 * time.Second}).DialContext
	}
	o.AllowHosts = slices.Clone(o.AllowHosts)
	for i, h := range o.AllowHosts {
		o.AllowHosts[i] = strings.ToLower(h)
	}
	f := &Fetcher{o: o}
	f.client = &http.Client{
		Transport: &http.Transport{
			Proxy:                 nil, // never through a proxy: the guard must see the real peer
			DialContext:           f.dial,
			TLSHandshakeTimeout:   5 * time.Second,
			ResponseHeaderTimeout: 10 * time.Second,
			MaxIdleConns:          16,
			IdleConnTimeout:       30 * time.Second,
		},
		CheckRedirect: f.checkRedirect,
	}
	f.noRedirects = &http.Client{
		Transport:     f.client.Transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return f, nil
}

func (f *Fetcher) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > f.o.MaxRedirects {
		return ErrTooManyRedirects
	}
	return checkURL(req.URL.String())
}

// dial resolves the host itself, checks every address, and connects to
// a checked one.
func (f *Fetcher) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	ips, err := f.o.Resolver.LookupIPAddr(ctx, host)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	if len(ips) == 0 {
		return nil, fmt.Errorf("resolve %s: no addresses", host)
	}
	exempt := f.o.AllowPrivate || slices.Contains(f.o.AllowHosts, strings.ToLower(host))
	var lastErr error
	for _, ip := range ips {
		if !exempt && !Allowed(ip.IP) {
			return nil, fmt.Errorf("%s: %w", host, ErrBlockedAddress)
		}
	}
	for _, ip := range ips {
		conn, err := f.o.Dial(ctx, network, net.JoinHostPort(ip.IP.String(), port))
		if err == nil {
			return conn, nil
		}
		lastErr = err
	}
	return nil, lastErr
}
