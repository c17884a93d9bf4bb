// Package httpapi is the HTTP face of imagegen: the API of INTERFACE.md,
// as an http.Handler that mounts under a prefix on any *http.ServeMux.
//
// Every response is JSON ({"error":{"code","message"}} for errors) except
// image downloads. Requests are authenticated with a Bearer API key (or
// the host app's own Authenticator), limited per key (RateLimit-Policy,
// RateLimit and, on 429, Retry-After headers), and failed
// authentications are limited per client IP before any key lookup.
package httpapi

import (
	"cmp"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/imagegen/imagegen"
)

// MaxBodyBytes is the largest request body accepted (413 beyond it).
const MaxBodyBytes = 1 << 20

// Config configures the handler. Service and Limiter are required.
type Config struct {
	Service *imagegen.Service
	// Prefix is where the API is mounted (default "/api/v1").
	Prefix string
	// PublicURL is the scheme and host that image URLs start with, for
	// example "https://img.example.com". Default: taken from each request.
	PublicURL string
	// Limiter limits requests per API key (the interface's 10 a minute).
	Limiter imagegen.Limiter
	// AuthFailures limits failed authentications per client IP. Nil
	// disables that limit (not recommended on a public server).
	AuthFailures AuthFailureLimiter
	// Authenticator identifies the caller. Default: Bearer API keys
	// checked by Service.Authenticate.
	Authenticator Authenticator
	// ClientIP returns the caller's address for AuthFailures. Default:
	// the host of r.RemoteAddr. Set it when behind a trusted proxy.
	ClientIP func(r *http.Request) string
	// SigningKey signs image URLs (HMAC-SHA256). Processes that serve the
	// same images must share it. Default: 32 random bytes per handler.
	SigningKey []byte
	Clock      imagegen.Clock // default SystemClock
	// Logger gets one line per request (method, route, status, duration,
	// request id, key id) and the details of server errors.
	Logger *slog.Logger // default slog.Default()
	// Observer is told of every answer, for metrics (package metrics).
	// Nil counts nothing.
	Observer Observer
}

// AuthFailureLimiter limits failed authentications per client IP.
type AuthFailureLimiter interface {
	// Blocked reports whether ip must wait, and for how long, before its
	// next authentication attempt is even looked at.
	Blocked(ip string) (retryAfter time.Duration, blocked bool)
	// Failure records one failed authentication from ip.
	Failure(ip string)
}

// Handler serves the API. Create it with New.
type Handler struct {
	cfg    Config
	mux    *http.ServeMux
	signer signer
}

// New returns the API handler for cfg.
func New(cfg Config) (*Handler, error) {
	cfg.Prefix = strings.TrimSuffix(cmp.Or(cfg.Prefix, "/api/v1"), "/")
	if cfg.Clock == nil {
		cfg.Clock = imagegen.SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.ClientIP == nil {
		cfg.ClientIP = remoteIP
	}
	if len(cfg.SigningKey) == 0 {
		cfg.SigningKey = make([]byte, 32)
		_, _ = rand.Read(cfg.SigningKey)
	}
	cfg.PublicURL = strings.TrimSuffix(cfg.PublicURL, "/")
	switch {
	case cfg.Service == nil:
		return nil, errors.New("httpapi: Config.Service is required")
	case cfg.Limiter == nil:
		return nil, errors.New("httpapi: Config.Limiter is required")
	case !strings.HasPrefix(cfg.Prefix, "/"):
		return nil, fmt.Errorf("httpapi: Config.Prefix must start with / (got %q)", cfg.Prefix)
	case len(cfg.SigningKey) < 16:
		return nil, errors.New("httpapi: Config.SigningKey must be at least 16 bytes")
	}
	if cfg.Authenticator == nil {
		cfg.Authenticator = BearerKeys{Service: cfg.Service}
	}
	h := &Handler{cfg: cfg, mux: http.NewServeMux(), signer: signer{key: cfg.SigningKey}}
	h.routes()
	return h, nil
}

// Register mounts the handler on mux at its prefix.
func (h *Handler) Register(mux *http.ServeMux) {
	mux.Handle(h.cfg.Prefix+"/", h)
}

// ServeHTTP serves one API request: it gives it a request id (see
// RequestIDHeader), serves it, logs it once and reports it to the
// Observer.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.serveObserved(w, r)
}
