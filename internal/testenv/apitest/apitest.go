// Package apitest builds the HTTP API the way the tests of httpapi,
// client and the examples exercise it: a service on the memory store with
// a scripted model, a memory rate limiter, and the httpapi handler
// registered on a mux. Each test changes only what it is about.
package apitest

import (
	"cmp"
	"context"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/httpapi"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/ratelimit"
	"github.com/imagegen/imagegen/store/memory"
)

// Quiet is a logger that keeps the service's logs out of test output.
var Quiet = slog.New(slog.DiscardHandler)

// Config says how a Stack differs from the default one.
type Config struct {
	// Clock is the clock of the service, its default store, the limiter
	// and the handler. Default: the time package's (imagegen.SystemClock).
	Clock imagegen.Clock
	// Store is the service's store. Default: a memory store on Clock.
	Store imagegen.Store
	// Model is the service's model. Default: imagegentest.NewModel(2), so
	// every task costs 2 credits.
	Model *imagegentest.Model
	// Limit is how many requests a key may make a minute. Default: 1000.
	Limit int
	// Service, when set, changes the service's config before imagegen.New.
	Service func(*imagegen.Config)
	// API, when set, changes the handler's config before httpapi.New.
	API func(*httpapi.Config)
}

// Stack is the service and the API handler serving it.
type Stack struct {
	Service *imagegen.Service
	Store   imagegen.Store // the service's
	Model   *imagegentest.Model
	API     *httpapi.Handler
	Mux     *http.ServeMux // the API registered on it

	t     testing.TB
	clock imagegen.Clock
	limit int
}

// New builds a Stack; it fails the test if any part does not build.
func New(t testing.TB, cfg Config) *Stack {
	t.Helper()
	if cfg.Store == nil {
		store, err := memory.New(memory.Config{Clock: cfg.Clock})
		if err != nil {
			t.Fatalf("apitest: store: %v", err)
		}
		cfg.Store = store
	}
	if cfg.Model == nil {
		cfg.Model = imagegentest.NewModel(2)
	}
	svcCfg := imagegen.Config{Store: cfg.Store, Model: cfg.Model, Clock: cfg.Clock, Logger: Quiet, WorkerConfig: imagegen.WorkerConfig{MaxAttempts: 2}}
	if cfg.Service != nil {
		cfg.Service(&svcCfg)
	}
	svc, err := imagegen.New(svcCfg)
	if err != nil {
		t.Fatalf("apitest: service: %v", err)
	}
	s := &Stack{Service: svc, Store: cfg.Store, Model: cfg.Model, t: t, clock: cfg.Clock, limit: cmp.Or(cfg.Limit, 1000)}
	var apiCfg httpapi.Config
	if cfg.API != nil {
		cfg.API(&apiCfg)
	}
	s.API, s.Mux = s.Handler(apiCfg)
	return s
}

// Handler builds an API handler on the stack's service, configured by
// cfg, and registers it on a mux of its own. Where cfg leaves them unset,
// the handler's Clock is the stack's, its Logger Quiet, and its Limiter a
// memory limiter of its own with the stack's Limit (on the stack's clock).
func (s *Stack) Handler(cfg httpapi.Config) (*httpapi.Handler, *http.ServeMux) {
	s.t.Helper()
	cfg.Service = s.Service
	if cfg.Clock == nil {
		cfg.Clock = s.clock
	}
	if cfg.Logger == nil {
		cfg.Logger = Quiet
	}
	if cfg.Limiter == nil {
		limiter, err := ratelimit.NewMemory(ratelimit.MemoryConfig{Limit: s.limit, Window: time.Minute, Clock: s.clock})
		if err != nil {
			s.t.Fatalf("apitest: limiter: %v", err)
		}
		cfg.Limiter = limiter
	}
	api, err := httpapi.New(cfg)
	if err != nil {
		s.t.Fatalf("apitest: handler: %v", err)
	}
	mux := http.NewServeMux()
	api.Register(mux)
	return api, mux
}

// User creates owner, grants them credits (none when 0) and returns a new
// API key of theirs.
func (s *Stack) User(owner string, credits int64) string {
	s.t.Helper()
	ctx := context.Background()
	key, _, err := s.Service.CreateKey(ctx, owner)
	if err != nil {
		s.t.Fatalf("apitest: key of %s: %v", owner, err)
	}
	if credits > 0 {
		if _, err := s.Service.Grant(ctx, owner, credits, uuid.NewString()); err != nil {
			s.t.Fatalf("apitest: grant to %s: %v", owner, err)
		}
	}
	return key
}
