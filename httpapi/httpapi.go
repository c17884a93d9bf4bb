// Package httpapi is the HTTP face of imagegen: the core API (docs/api.md),
// as an http.Handler that mounts under a prefix on any *http.ServeMux.
//
// Every response is JSON ({"error":{"code","message"}} for errors) except
// image downloads. Requests are authenticated with a Bearer API key (or
// the host app's own Authenticator), limited per key (RateLimit-Policy,
// RateLimit and, on 429, Retry-After headers), and failed
// authentications are limited per client address (a valid key is never
// refused for what others sent from its address).
//
// The handler is a front end of the Service and nothing more: it reads
// a request, calls the Service (a submit through
// Service.SubmitIdempotent, which keeps the Idempotency-Key records) and
// writes the answer in the shapes of package wire, which the Go client
// shares. It reaches no store; the one part of one it may need, a
// presigning BlobStore, is Config.Blobs.
package httpapi

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/drain"
	"github.com/imagegen/imagegen/internal/memo"
	"github.com/imagegen/imagegen/internal/netprefix"
	"github.com/imagegen/imagegen/internal/waitslots"
	"github.com/imagegen/imagegen/internal/weburl"
)

// MaxBodyBytes is the largest request body accepted (413 beyond it).
const MaxBodyBytes = 1 << 20

// DefaultMaxStoreWaits is the default of Config.MaxStoreWaits.
const DefaultMaxStoreWaits = 64

// DefaultMaxWaitsPerOwner is the default of Config.MaxWaitsPerOwner: twice
// the console's per-user bound, as an API client may follow several
// batches at once.
const DefaultMaxWaitsPerOwner = 20

// Config configures the handler. Service and Limiter are required.
type Config struct {
	Service *imagegen.Service
	// Prefix is where the API is mounted (default "/api/v1").
	Prefix string
	// PublicURL is the scheme and host that image URLs start with, for
	// example "https://img.example.com". Without it, each answer builds
	// them from its own request: "https" if the connection to this
	// process is TLS, else "http", and the request's Host header as sent
	// by the client (X-Forwarded-* headers are not read). A client can
	// then make its own answers name any host, and behind a TLS-ending
	// proxy the URLs say http: set PublicURL on any server reachable from
	// outside (serve always sets it). Callbacks need it.
	PublicURL string
	// Limiter limits requests per API key (the interface's 10 a minute).
	Limiter imagegen.Limiter
	// AuthFailures limits failed authentications per client address. A
	// request is authenticated first, so a valid key is always served;
	// each failed authentication is one request to AuthFailures under the
	// key "authfail:" + the client's address (an IPv4 address, or the /64
	// of an IPv6 one), and once it refuses, failures get 429 with
	// Retry-After instead of 401. Give it a limiter of its own, e.g.
	// ratelimit.NewMemory (one process), or ratelimit/redis.New or
	// ratelimit/postgres.New with its own Prefix (counts shared by every
	// API process; Close a PostgreSQL limiter before its pool). Nil disables the limit (not recommended on a public
	// server).
	AuthFailures imagegen.Limiter
	// TrustedProxies are the reverse proxies whose ForwardedHeader is
	// believed: when the peer is in one of these prefixes, the client is
	// the rightmost forwarded address that is not itself a trusted proxy.
	// Default: none, the client is the peer.
	TrustedProxies []netip.Prefix
	// ForwardedHeader is the one header the trusted proxies write the
	// client's address into: "X-Forwarded-For" (the default; nginx,
	// HAProxy, cloud load balancers append to it) or "Forwarded"
	// (RFC 7239). Only that header is read: a proxy passes the other one
	// through as the client wrote it, so reading it would let a client
	// name any address.
	ForwardedHeader string
	// Authenticator identifies the caller. Default: Bearer API keys
	// checked by Service.Authenticate.
	Authenticator Authenticator
	// ClientIP names the client of a request for AuthFailures. Default:
	// its address as read through TrustedProxies, IPv6 grouped by /64.
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
	// a presigned URL of the store's BlobStore, valid this long (less
	// when the image expires sooner: never past it); the BlobStore must
	// implement imagegen.BlobPresigner (blob/s3 does).
	// Each download gets a fresh URL, so the link a client keeps (the
	// signed API URL) works until the image expires.
	PresignTTL time.Duration
	// Blobs is the service's BlobStore (its store's Blobs()), needed
	// with PresignTTL: it must presign URLs (imagegen.BlobPresigner).
	Blobs imagegen.BlobStore
	// MaxStoreWaits bounds the image downloads that wait for the
	// BlobStore at once (default DefaultMaxStoreWaits; negative: no
	// bound). A download counts while it waits for the store's first
	// answer, and while each later read of its bytes is in flight; one
	// that would go beyond the bound is refused at once with 503
	// storage_unavailable and Retry-After. So a store that stops
	// answering ties up at most that many downloads, each for at most
	// the Service's Config.BlobTimeout per store call (then 504
	// storage_timeout).
	MaxStoreWaits int
	// MaxWaitsPerOwner bounds the long waits one owner (a user, whatever
	// API keys they use) holds open at once: polls with "Prefer: wait=N"
	// (N > 0) and OpenAI-compatible requests, each of which holds a
	// goroutine, a connection and a store watch for up to a minute or two.
	// Default DefaultMaxWaitsPerOwner; negative: no bound. Each API
	// process counts its own: behind a load balancer an owner may hold
	// this many in every process. A poll beyond the bound is answered at
	// once with the task as it stands, without Preference-Applied (RFC
	// 7240 lets a server ignore a preference); an OpenAI request beyond
	// it is refused before it submits anything, with 429
	// rate_limit_exceeded and Retry-After.
	MaxWaitsPerOwner int
	// OpenAIPrefix, when set (for example "/v1"), also serves the
	// OpenAI-compatible POST {OpenAIPrefix}/images/generations and
	// GET {OpenAIPrefix}/models, an optional extension; any other path
	// under it answers OpenAI's 404. Default: off.
	OpenAIPrefix string
	// OpenAIModels are the model ids GET {OpenAIPrefix}/models lists (the
	// request's model field is ignored: the service's model runs).
	// Default: DefaultOpenAIModel alone; server.New lists the service's
	// model.
	OpenAIModels []string
	// OpenAIWait bounds how long that endpoint waits for its task to
	// start (default imagegen.MaxWait); a task a worker is running then
	// is waited for at most one more OpenAIWait. A task pending at the
	// deadline, or still running after the extension, is cancelled and
	// refunded in full, and the answer is a 504. A request can thus wait
	// twice OpenAIWait; the handler moves its connection's write deadline
	// past that (and 30 s to write the answer), whatever WriteTimeout
	// the http.Server has.
	OpenAIWait time.Duration
	Clock      imagegen.Clock // default SystemClock
	// Logger gets one line per request (method, route, status, duration,
	// request id, key id; on a submit also the task's task_id, model and
	// cost, which the service then does not log again as "task
	// submitted") and the details of server errors.
	Logger *slog.Logger // default slog.Default()
	// Observer is told of every answer (Observer.HTTPRequest), for
	// metrics (package metrics); usually the service's own. Nil counts
	// nothing.
	Observer imagegen.Observer
}

// Handler serves the API. Create it with New.
type Handler struct {
	cfg Config
	// mux routes ServeHTTP's requests; patterns are its routes, which
	// Register mounts on the app's mux one by one.
	mux      *http.ServeMux
	patterns []route
	signer   signer
	// presigner is set when Config.PresignTTL > 0.
	presigner imagegen.BlobPresigner
	// storeWaits counts the downloads waiting for the BlobStore
	// (Config.MaxStoreWaits).
	storeWaits atomic.Int64
	// keyIDs are the log lines' key ids of recent callers.
	keyIDs *memo.Strings
	// policy is the last RateLimit-Policy value written (policyOf).
	policy atomic.Pointer[policyText]
	// drained cuts the long waits short once Drain is called.
	drained *drain.Waits
	// waits counts the long waits each owner holds open
	// (Config.MaxWaitsPerOwner).
	waits *waitslots.Slots
	// created is when New ran: the created time of the OpenAI models.
	created time.Time
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
	if cfg.Observer == nil {
		cfg.Observer = imagegen.NopObserver{}
	}
	if len(cfg.SigningKey) == 0 {
		cfg.SigningKey = imagegen.NewSecretKey()
	}
	cfg.PublicURL = strings.TrimSuffix(cfg.PublicURL, "/")
	cfg.ImageBaseURL = strings.TrimSuffix(cfg.ImageBaseURL, "/")
	cfg.OpenAIPrefix = strings.TrimSuffix(cfg.OpenAIPrefix, "/")
	// A proxy written IPv4-mapped ("::ffff:10.0.0.0/104") is read as the
	// IPv4 range it covers, as peers are read unmapped (a copy: the
	// caller's slice is theirs).
	proxies := make([]netip.Prefix, len(cfg.TrustedProxies))
	for i, p := range cfg.TrustedProxies {
		proxies[i] = netprefix.Unmap(p)
	}
	cfg.TrustedProxies = proxies
	cfg.OpenAIWait = cmp.Or(cfg.OpenAIWait, imagegen.MaxWait)
	cfg.MaxStoreWaits = cmp.Or(cfg.MaxStoreWaits, DefaultMaxStoreWaits)
	cfg.MaxWaitsPerOwner = cmp.Or(cfg.MaxWaitsPerOwner, DefaultMaxWaitsPerOwner)
	cfg.ForwardedHeader = cmp.Or(http.CanonicalHeaderKey(cfg.ForwardedHeader), "X-Forwarded-For")
	switch {
	case cfg.Service == nil:
		return nil, errors.New("httpapi: Config.Service is required")
	case cfg.Limiter == nil:
		return nil, errors.New("httpapi: Config.Limiter is required")
	case !weburl.PathPrefix(cfg.Prefix):
		return nil, fmt.Errorf("httpapi: Config.Prefix must be a clean path such as /api/v1, without spaces, controls, braces or backslashes (got %q)", cfg.Prefix)
	case cfg.OpenAIPrefix != "" && (!weburl.PathPrefix(cfg.OpenAIPrefix) || cfg.OpenAIPrefix == cfg.Prefix):
		return nil, fmt.Errorf("httpapi: Config.OpenAIPrefix must be a clean path such as /v1, without spaces, controls, braces or backslashes, and differ from Prefix (got %q)", cfg.OpenAIPrefix)
	case cfg.ForwardedHeader != "X-Forwarded-For" && cfg.ForwardedHeader != "Forwarded":
		return nil, fmt.Errorf("httpapi: Config.ForwardedHeader must be X-Forwarded-For or Forwarded (got %q)", cfg.ForwardedHeader)
	case cfg.OpenAIWait < 0:
		return nil, errors.New("httpapi: Config.OpenAIWait must not be negative")
	case len(cfg.SigningKey) < 16:
		return nil, errors.New("httpapi: Config.SigningKey must be at least 16 bytes")
	case cfg.PresignTTL < 0:
		return nil, errors.New("httpapi: Config.PresignTTL must not be negative")
	case cfg.PresignTTL > 0 && cfg.ImageBaseURL != "":
		return nil, errors.New("httpapi: set Config.ImageBaseURL or Config.PresignTTL, not both")
	case cfg.ImageBaseURL != "" && !weburl.Absolute(cfg.ImageBaseURL):
		return nil, fmt.Errorf("httpapi: Config.ImageBaseURL must be an absolute http(s) URL without credentials, query or fragment (got %s)", weburl.Shown(cfg.ImageBaseURL))
	}
	var presigner imagegen.BlobPresigner
	if cfg.PresignTTL > 0 {
		p, ok := cfg.Blobs.(imagegen.BlobPresigner)
		if !ok {
			return nil, errors.New("httpapi: Config.PresignTTL needs Config.Blobs, a BlobStore that presigns URLs (such as blob/s3)")
		}
		presigner = p
	}
	if cfg.Authenticator == nil {
		cfg.Authenticator = BearerKeys{Service: cfg.Service}
	}
	h := &Handler{cfg: cfg, mux: http.NewServeMux(), signer: signer{key: cfg.SigningKey}, presigner: presigner, keyIDs: memo.New(keyID),
		drained: drain.New(), waits: waitslots.New(cfg.MaxWaitsPerOwner), created: cfg.Clock.Now()}
	if h.cfg.ClientIP == nil {
		h.cfg.ClientIP = func(r *http.Request) string { return clientGroup(h.clientAddr(r)) }
	}
	h.routes()
	return h, nil
}

// ClientIP names the client of r as the API's failed-authentication
// limit counts it (Config.ClientIP, or the address with trusted proxies
// applied), for other front ends that share that limit.
func (h *Handler) ClientIP(r *http.Request) string { return h.cfg.ClientIP(r) }

// Register mounts the API on mux: every route under its prefix (which
// answers 404 for any other path under it), and under
// OpenAIPrefix when the OpenAI-compatible endpoint is on (any other path
// under it answers OpenAI's 404). The
// routes go on mux itself, each pattern as the API serves it (such as
// "GET /api/v1/tasks/{task_id}"), so a request is routed once; mux must
// not hold patterns under the prefix that conflict with them (net/http
// panics on such a pair). Mounting the Handler itself, as in
// mux.Handle("/api/v1/", h), serves the same API through its own routes.
func (h *Handler) Register(mux *http.ServeMux) {
	for _, rt := range h.patterns {
		next := rt.handler
		mux.Handle(rt.pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.serveObserved(w, r, next)
		}))
	}
}

// ServeHTTP serves one API request: it gives it a request id (see
// RequestIDHeader), serves it, logs it once and reports it to the
// Observer.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.serveObserved(w, r, h.mux)
}
