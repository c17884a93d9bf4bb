// Package server wires the standard imagegen stack in one call: the
// service with its workers, the HTTP API with the per-key rate limit and
// the failed-authentication limit, and the delivery of callbacks. It is
// the path for an app that wants "the imagegen API, mounted on my mux";
// each part stays available for apps that wire them by hand.
//
//	srv, err := server.New(ctx, server.Config{
//		Service:   imagegen.Config{Store: store, Model: model},
//		PublicURL: "https://app.example.com",
//	})
//	srv.Register(mux)  // the API under /api/v1/, and /healthz and /readyz
//	go srv.Run(ctx)    // workers and callback deliveries, until ctx ends
//
// Register also mounts the probes of package health next to the API,
// since load balancers probe the serving port: GET /healthz (liveness:
// 200 while the process serves HTTP) and GET /readyz (readiness: 200, or
// 503 {"status":"unavailable","down":["store"]} naming what is down,
// never its error). Readiness pings the store and, where this process
// runs workers, checks the model's configuration; Config.ReadyChecks adds
// the app's own. Config.LivePath and Config.ReadyPath move them, and
// Config.NoProbes leaves them out for an app that answers those paths
// itself.
//
// Every optional part has a default: an in-process limiter of 10 requests
// a minute per key, an in-process limit of failed authentications per
// client address, the guarded fetcher as the callback sender, and an
// image-URL signing key kept in the store (so every process on a shared
// store signs alike, and URLs survive restarts). The clock and logger of
// Config.Service are used by every part.
package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/fetch"
	"github.com/imagegen/imagegen/health"
	"github.com/imagegen/imagegen/httpapi"
	"github.com/imagegen/imagegen/internal/weburl"
	"github.com/imagegen/imagegen/ratelimit"
	"github.com/imagegen/imagegen/webhook"
)

// DefaultRateLimit is how many requests a key may make a minute when
// Config.RateLimit is zero.
const DefaultRateLimit = 10

// DefaultAuthFailures is how many failed authentications a client address
// may make a minute (then 429) when Config.AuthFailures is nil.
const DefaultAuthFailures = 10

// SigningSecretName is the name under which the default image-URL signing
// key is kept in the store (imagegen.SecretStore).
const SigningSecretName = "url-signing"

// Config configures a Server. Service.Store, Service.Model and PublicURL
// are required; everything else has a default.
type Config struct {
	// Service configures the service and its workers (imagegen.Config:
	// Store and Model are required). Its Clock, Logger and Observer
	// serve every other part too (the API's answers and the callback
	// deliveries are reported to that Observer).
	Service imagegen.Config

	// PublicURL is the absolute http(s) URL that image URLs and callback
	// bodies start with, e.g. "https://app.example.com". Required: image
	// URLs must not be built from a request's Host header.
	PublicURL string
	// Prefix is where the API is mounted (default "/api/v1").
	Prefix string
	// OpenAIPrefix, when set (for example "/v1"), also serves the
	// OpenAI-compatible POST {OpenAIPrefix}/images/generations and
	// GET {OpenAIPrefix}/models (httpapi.Config.OpenAIPrefix). Default:
	// off.
	OpenAIPrefix string
	// OpenAIModels are the model ids GET {OpenAIPrefix}/models lists.
	// Default: the model Service.Model plans for a text-to-image request,
	// which is what the OpenAI-compatible endpoint runs.
	OpenAIModels []string

	// RateLimit is how many requests one API key may make in any rolling
	// minute (default DefaultRateLimit). Ignored when Limiter is set.
	RateLimit int
	// Limiter limits requests per key. Default: an in-process limiter of
	// RateLimit a minute. Processes that share a store should share a
	// limiter too (ratelimit/redis.New or ratelimit/postgres.New; Close a
	// PostgreSQL limiter, which sweeps idle keys, before its pool).
	Limiter imagegen.Limiter
	// AuthFailures counts failed authentications per client address
	// (httpapi.Config.AuthFailures). Default: an in-process limiter of
	// DefaultAuthFailures a minute. Processes that share a store should
	// share it too (ratelimit/redis.New or ratelimit/postgres.New, with a
	// Prefix of its own).
	AuthFailures imagegen.Limiter
	// TrustedProxies are the reverse proxies whose X-Forwarded-For and
	// Forwarded headers name the client (httpapi.Config.TrustedProxies).
	// Default: none, the client is the peer address.
	TrustedProxies []netip.Prefix
	// ForwardedHeader is the header those proxies name the client in
	// (httpapi.Config.ForwardedHeader; default X-Forwarded-For).
	ForwardedHeader string
	// Login is the host app's own sign-in (sessions, tokens), tried before
	// API keys: a request it refuses with an error wrapping
	// imagegen.ErrUnauthorized is then checked as a Bearer API key.
	// Default: API keys only. (To replace API keys altogether, wire
	// httpapi.New by hand with its Authenticator.)
	//
	// A browser sends a site's cookies with requests that other sites'
	// pages make, so Login never sees a browser's cross-origin POST,
	// PUT, PATCH or DELETE (httpapi.SameOriginOnly): such a request is
	// checked as an API key only. LoginTrustedOrigins names the origins
	// whose pages may make them ("https://app.example.com").
	Login               httpapi.Authenticator
	LoginTrustedOrigins []string
	// SigningKey signs image URLs (at least 16 bytes). Default: a random
	// key kept in the store under SigningSecretName, made by the first
	// process that needs it.
	SigningKey []byte
	// ImageBaseURL and PresignTTL redirect image downloads to a CDN or to
	// presigned object-store URLs (see httpapi.Config).
	ImageBaseURL string
	PresignTTL   time.Duration
	// MaxStoreWaits bounds the image downloads waiting for the BlobStore
	// at once (httpapi.Config.MaxStoreWaits; default 64).
	MaxStoreWaits int
	// MaxWaitsPerOwner bounds the long waits one user holds open at once
	// in this process (httpapi.Config.MaxWaitsPerOwner; default 20,
	// negative: no bound).
	MaxWaitsPerOwner int

	// Callbacks sends callback deliveries. Default: the guarded fetcher
	// (fetch.New), allowed to reach private addresses only when
	// Service.AllowHTTPCallbacks is set.
	Callbacks webhook.Poster
	// Webhooks tunes the callback dispatcher (attempts, backoff,
	// concurrency). Its Service, Store, Render, Poster, Clock, Logger
	// and Observer are filled in by New.
	Webhooks webhook.Config

	// NoWorkers makes Run deliver callbacks without running generations:
	// an API-only process, with workers elsewhere on a shared store.
	NoWorkers bool

	// LivePath and ReadyPath are where Register mounts the liveness and
	// readiness probes (defaults DefaultLivePath and DefaultReadyPath).
	LivePath, ReadyPath string
	// NoProbes leaves the probes out of Register and ServeHTTP, for an
	// app that already answers those paths (a mux panics on a second
	// pattern for one path).
	NoProbes bool
	// ReadyChecks are checked by the readiness probe besides the store
	// and the model, e.g. the app's own database. Each check, like
	// those, is bounded by ProbeTimeout.
	ReadyChecks []health.Check
	// ProbeTimeout bounds each readiness check (default 1s), so the
	// probe answers in about that long even when a dependency hangs.
	ProbeTimeout time.Duration
}

// Default probe paths (Config.LivePath, Config.ReadyPath).
const (
	DefaultLivePath  = "/healthz"
	DefaultReadyPath = "/readyz"
)

// Server is the standard stack. It is an http.Handler serving the API
// under its prefix and the probes.
type Server struct {
	svc        *imagegen.Service
	api        *httpapi.Handler
	dispatcher *webhook.Dispatcher
	limiter    imagegen.Limiter
	authFails  imagegen.Limiter
	noWorkers  bool
	probes     *health.Handler // nil with Config.NoProbes
	livePath   string
	readyPath  string
}

// New builds the stack, or returns an error naming the missing or bad
// field. ctx bounds the store call that fetches the default signing key.
func New(ctx context.Context, cfg Config) (*Server, error) {
	if err := checkPublicURL(cfg.PublicURL); err != nil {
		return nil, err
	}
	if cfg.Service.Clock == nil {
		cfg.Service.Clock = imagegen.SystemClock{}
	}
	if cfg.Service.Logger == nil {
		cfg.Service.Logger = slog.Default()
	}
	svc, err := imagegen.New(cfg.Service)
	if err != nil {
		return nil, fmt.Errorf("server: Config.Service: %w", err)
	}
	clock, log := cfg.Service.Clock, cfg.Service.Logger

	if cfg.Limiter == nil {
		if cfg.RateLimit < 0 {
			return nil, fmt.Errorf("server: Config.RateLimit must not be negative (got %d)", cfg.RateLimit)
		}
		limit := cfg.RateLimit
		if limit == 0 {
			limit = DefaultRateLimit
		}
		if cfg.Limiter, err = ratelimit.NewMemory(ratelimit.MemoryConfig{Limit: limit, Window: time.Minute, Clock: clock}); err != nil {
			return nil, fmt.Errorf("server: rate limiter: %w", err)
		}
	}
	if cfg.AuthFailures == nil {
		if cfg.AuthFailures, err = ratelimit.NewMemory(ratelimit.MemoryConfig{Limit: DefaultAuthFailures, Window: time.Minute, Clock: clock}); err != nil {
			return nil, fmt.Errorf("server: failed-authentication limiter: %w", err)
		}
	}
	if len(cfg.SigningKey) == 0 {
		if cfg.SigningKey, err = cfg.Service.Store.SharedSecret(ctx, SigningSecretName, imagegen.NewSecretKey); err != nil {
			return nil, fmt.Errorf("server: signing key from the store: %w", err)
		}
	}
	var auth httpapi.Authenticator = httpapi.BearerKeys{Service: svc}
	if cfg.Login != nil {
		origins := http.NewCrossOriginProtection()
		for _, o := range cfg.LoginTrustedOrigins {
			if err := origins.AddTrustedOrigin(o); err != nil {
				return nil, fmt.Errorf("server: LoginTrustedOrigins: %w", err)
			}
		}
		auth = httpapi.FirstOf(httpapi.SameOriginOnly(cfg.Login, origins), auth)
	}
	api, err := httpapi.New(httpapi.Config{
		Service:          svc,
		Prefix:           cfg.Prefix,
		OpenAIPrefix:     cfg.OpenAIPrefix,
		OpenAIModels:     openAIModels(cfg),
		PublicURL:        cfg.PublicURL,
		Limiter:          cfg.Limiter,
		AuthFailures:     cfg.AuthFailures,
		TrustedProxies:   cfg.TrustedProxies,
		ForwardedHeader:  cfg.ForwardedHeader,
		Authenticator:    auth,
		SigningKey:       cfg.SigningKey,
		ImageBaseURL:     cfg.ImageBaseURL,
		PresignTTL:       cfg.PresignTTL,
		Blobs:            cfg.Service.Store.Blobs(),
		MaxStoreWaits:    cfg.MaxStoreWaits,
		MaxWaitsPerOwner: cfg.MaxWaitsPerOwner,
		Clock:            clock,
		Logger:           log,
		Observer:         cfg.Service.Observer,
	})
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	if cfg.Callbacks == nil {
		f, err := fetch.New(fetch.Config{AllowPrivate: cfg.Service.AllowHTTPCallbacks})
		if err != nil {
			return nil, fmt.Errorf("server: callback sender: %w", err)
		}
		cfg.Callbacks = f
	}
	wc := cfg.Webhooks
	wc.Service, wc.Store, wc.Render, wc.Poster = svc, cfg.Service.Store, api.TaskJSON, cfg.Callbacks
	wc.Clock, wc.Logger, wc.Observer = clock, log, cfg.Service.Observer
	dispatcher, err := webhook.NewDispatcher(wc)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	srv := &Server{svc: svc, api: api, dispatcher: dispatcher, limiter: cfg.Limiter, authFails: cfg.AuthFailures, noWorkers: cfg.NoWorkers}
	if !cfg.NoProbes {
		if err := srv.newProbes(cfg, log); err != nil {
			return nil, err
		}
	}
	return srv, nil
}

// newProbes makes the liveness and readiness probes of cfg.
func (s *Server) newProbes(cfg Config, log *slog.Logger) error {
	s.livePath = cmp.Or(cfg.LivePath, DefaultLivePath)
	s.readyPath = cmp.Or(cfg.ReadyPath, DefaultReadyPath)
	for _, p := range []struct{ field, path string }{{"LivePath", s.livePath}, {"ReadyPath", s.readyPath}} {
		if !strings.HasPrefix(p.path, "/") || strings.ContainsAny(p.path, " \t{}") {
			return fmt.Errorf("server: Config.%s must be a path starting with / (got %q)", p.field, p.path)
		}
	}
	if s.livePath == s.readyPath {
		return fmt.Errorf("server: Config.LivePath and Config.ReadyPath must differ (both %q)", s.livePath)
	}
	probes, err := health.New(health.Config{
		Checks: append(ReadyChecks(cfg.Service, !cfg.NoWorkers), cfg.ReadyChecks...), Timeout: cfg.ProbeTimeout, Logger: log,
	})
	if err != nil {
		return fmt.Errorf("server: Config.ReadyChecks: %w", err)
	}
	s.probes = probes
	return nil
}

// ReadyChecks are the readiness checks of a process running a service
// of cfg: its store answers ("store"), its BlobStore answers ("blobs",
// BlobsCheck, optional), and, when the process runs workers, its model
// still plans a request ("model", ModelCheck). The probes of New use
// them, and so does a process that runs only workers.
func ReadyChecks(cfg imagegen.Config, runsWorkers bool) []health.Check {
	checks := []health.Check{{Name: "store", Check: cfg.Store.Ping}, BlobsCheck(cfg.Store.Blobs())}
	if runsWorkers {
		checks = append(checks, ModelCheck(cfg.Model))
	}
	return checks
}

// BlobsCheck is the readiness check of the image store (named "blobs"):
// its Ping when it has one (blob/s3's checks the bucket), else a Stat of
// a key that is never written, which a store that answers reports as
// missing. It is Optional: an image store that is down is reported
// ("degraded", with its cause) but leaves the process ready, since it
// is down for every process alike and the rest of the API (submits,
// polls, credits) still works; downloads answer 503 or 504 meanwhile,
// and workers retry the tasks whose images they cannot store.
func BlobsCheck(blobs imagegen.BlobStore) health.Check {
	return health.Check{Name: "blobs", Optional: true, Check: func(ctx context.Context) error {
		if p, ok := blobs.(interface{ Ping(context.Context) error }); ok {
			return p.Ping(ctx)
		}
		_, err := blobs.Stat(ctx, blobProbeKey)
		if errors.Is(err, imagegen.ErrBlobNotFound) {
			return nil
		}
		return err
	}}
}

// blobProbeKey is the key BlobsCheck looks up: never written.
const blobProbeKey = "imagegen-readiness-probe"

// ModelCheck is the readiness check of a model (named "model"): it must
// still plan a request, that is its configuration is whole. Plan does
// no I/O, so the check is cheap.
func ModelCheck(model imagegen.Model) health.Check {
	return health.Check{Name: "model", Check: func(context.Context) error {
		_, err := model.Plan(imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "readiness check", AspectRatio: imagegen.AspectAuto})
		return err
	}}
}

func checkPublicURL(raw string) error {
	if raw == "" {
		return errors.New("server: Config.PublicURL is required (the scheme and host image URLs start with, e.g. https://app.example.com)")
	}
	if !weburl.Absolute(raw) {
		return fmt.Errorf("server: Config.PublicURL must be an absolute http(s) URL without credentials, query or fragment (got %s)", weburl.Shown(raw))
	}
	return nil
}

// Service returns the service: submit, tasks, credits, keys.
func (s *Server) Service() *imagegen.Service { return s.svc }

// API returns the HTTP API handler (for ImageURLs and TaskJSON).
func (s *Server) API() *httpapi.Handler { return s.api }

// Drain answers every open "Prefer: wait" request at once with its task
// as it stands (httpapi.Handler.Drain), so that shutting the HTTP server
// down is not held up by long polls:
//
//	httpServer.RegisterOnShutdown(srv.Drain)
func (s *Server) Drain() { s.api.Drain() }

// Limiter returns the per-key rate limit of the API (Config.Limiter or
// the default), for other front ends that must count against the same
// limit, such as the web console's playground.
func (s *Server) Limiter() imagegen.Limiter { return s.limiter }

// AuthFailures returns the limit of failed authentications per client
// address (Config.AuthFailures or the default), for other sign-in forms
// that must share it, such as the web console's.
func (s *Server) AuthFailures() imagegen.Limiter { return s.authFails }

// Register mounts the API on mux under its prefix, and GET /healthz and
// GET /readyz (Config.LivePath, Config.ReadyPath) unless Config.NoProbes.
func (s *Server) Register(mux *http.ServeMux) {
	s.api.Register(mux)
	if s.probes != nil {
		mux.HandleFunc("GET "+s.livePath, s.probes.Live)
		mux.HandleFunc("GET "+s.readyPath, s.probes.Ready)
	}
}

// ServeHTTP serves one API request, or a probe (as Register mounts them).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.probes != nil && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		switch r.URL.Path {
		case s.livePath:
			s.probes.Live(w, r)
			return
		case s.readyPath:
			s.probes.Ready(w, r)
			return
		}
	}
	s.api.ServeHTTP(w, r)
}

// Run runs the workers (Service.Run, unless Config.NoWorkers) and
// delivers callbacks until ctx ends, then returns once both have stopped
// (running generations get Config.Service.ShutdownTimeout to finish).
// Callbacks are queued in the store, so on a shared store any process
// that calls Run delivers every process's callbacks. It returns the
// errors of Service.Run and webhook.Dispatcher.Run, joined: nil after a
// clean stop (neither returns one today: they log a failing store and
// try again; the result is kept for a part that cannot start).
func (s *Server) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	errs := make([]error, 2)
	wg.Add(1)
	go func() { defer wg.Done(); errs[1] = s.dispatcher.Run(ctx) }()
	if !s.noWorkers {
		wg.Add(1)
		go func() { defer wg.Done(); errs[0] = s.svc.Run(ctx) }()
	}
	wg.Wait()
	return errors.Join(errs...) // even once ctx ended: a part that failed before the stop still failed
}

// openAIModels is Config.OpenAIModels, or the model that the service's
// model plans for a text-to-image request (nil, the API's default, when
// it plans none).
func openAIModels(cfg Config) []string {
	if len(cfg.OpenAIModels) > 0 || cfg.OpenAIPrefix == "" {
		return cfg.OpenAIModels
	}
	p, err := cfg.Service.Model.Plan(imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "a model list", AspectRatio: imagegen.AspectAuto})
	if err != nil || p.Model == "" {
		return nil
	}
	return []string{p.Model}
}
