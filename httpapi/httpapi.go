// Package httpapi is the HTTP face of imagegen: the core API (docs/api.md),
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
	"net/url"
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
	// ImageBaseURL, when set, makes image downloads redirect (302) to
	// ImageBaseURL + "/" + image id: a CDN whose origin serves the blob
	// store's keys (for blob/s3, the bucket with the store's prefix as
	// origin path). The bytes then never pass through this process.
	ImageBaseURL string
	// PresignTTL, when positive, makes image downloads redirect (302) to
	// a presigned URL of the store's BlobStore, valid this long; the
	// BlobStore must implement imagegen.BlobPresigner (blob/s3 does).
	// Each download gets a fresh URL, so the link a client keeps (the
	// signed API URL) works until the image expires.
	PresignTTL time.Duration
	Clock      imagegen.Clock // default SystemClock
	Logger     *slog.Logger   // default slog.Default()
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
	cfg       Config
	mux       *http.ServeMux
	signer    signer
	presigner imagegen.BlobPresigner // set when Config.PresignTTL > 0
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
	cfg.ImageBaseURL = strings.TrimSuffix(cfg.ImageBaseURL, "/")
	switch {
	case cfg.Service == nil:
		return nil, errors.New("httpapi: Config.Service is required")
	case cfg.Limiter == nil:
		return nil, errors.New("httpapi: Config.Limiter is required")
	case !strings.HasPrefix(cfg.Prefix, "/"):
		return nil, fmt.Errorf("httpapi: Config.Prefix must start with / (got %q)", cfg.Prefix)
	case len(cfg.SigningKey) < 16:
		return nil, errors.New("httpapi: Config.SigningKey must be at least 16 bytes")
	case cfg.PresignTTL < 0:
		return nil, errors.New("httpapi: Config.PresignTTL must not be negative")
	case cfg.PresignTTL > 0 && cfg.ImageBaseURL != "":
		return nil, errors.New("httpapi: set Config.ImageBaseURL or Config.PresignTTL, not both")
	case cfg.ImageBaseURL != "" && !isHTTPURL(cfg.ImageBaseURL):
		return nil, fmt.Errorf("httpapi: Config.ImageBaseURL must be an http(s) URL (got %q)", cfg.ImageBaseURL)
	}
	var presigner imagegen.BlobPresigner
	if cfg.PresignTTL > 0 {
		p, ok := cfg.Service.Store().Blobs().(imagegen.BlobPresigner)
		if !ok {
			return nil, errors.New("httpapi: Config.PresignTTL needs a BlobStore that presigns URLs (such as blob/s3)")
		}
		presigner = p
	}
	if cfg.Authenticator == nil {
		cfg.Authenticator = BearerKeys{Service: cfg.Service}
	}
	h := &Handler{cfg: cfg, mux: http.NewServeMux(), signer: signer{key: cfg.SigningKey}, presigner: presigner}
	h.routes()
	return h, nil
}

func isHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// Register mounts the handler on mux at its prefix.
func (h *Handler) Register(mux *http.ServeMux) {
	mux.Handle(h.cfg.Prefix+"/", h)
}

// ServeHTTP serves one API request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mux.ServeHTTP(w, r)
}
