package client_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/client"
	"github.com/imagegen/imagegen/httpapi"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/ratelimit"
	"github.com/imagegen/imagegen/store/memory"
)

// env is the real API handler (httpapi on the memory store, a scripted
// model, a manual clock, the memory limiter) behind a loopback httptest
// server that logs every request it gets.
type env struct {
	t     *testing.T
	clock *imagegentest.Clock
	svc   *imagegen.Service
	model *imagegentest.Model
	mux   *http.ServeMux // the real handler, for requests made around the server
	srv   *httptest.Server
	key   string // a key of "alice", who has 10 credits
	limit int

	mu       sync.Mutex
	requests []arrival
	wrap     func(http.Handler) http.Handler
}

// arrival is one request the server got.
type arrival struct {
	at     time.Time // on the manual clock
	method string
	path   string
	status int
	header http.Header
}

type envOptions struct {
	limit int
	store func(imagegen.Clock) imagegen.Store
}

var quiet = slog.New(slog.DiscardHandler)

func newEnv(t *testing.T, opts ...func(*envOptions)) *env {
	t.Helper()
	is := is.New(t)
	o := envOptions{limit: 1000}
	for _, f := range opts {
		f(&o)
	}
	clock := imagegentest.NewClock(time.Time{})
	var store imagegen.Store = memory.New(memory.Options{Clock: clock})
	if o.store != nil {
		store = o.store(clock)
	}
	model := imagegentest.NewModel(2)
	svc, err := imagegen.New(imagegen.Config{Store: store, Model: model, Clock: clock, MaxAttempts: 2, Logger: quiet})
	is.NoErr(err)
	limiter, err := ratelimit.NewMemory(ratelimit.Config{Limit: o.limit, Window: time.Minute, Clock: clock})
	is.NoErr(err)
	api, err := httpapi.New(httpapi.Config{Service: svc, Limiter: limiter, Clock: clock, Logger: quiet})
	is.NoErr(err)
	mux := http.NewServeMux()
	api.Register(mux)
	e := &env{t: t, clock: clock, svc: svc, model: model, mux: mux, limit: o.limit}
	e.srv = httptest.NewServer(http.HandlerFunc(e.serve))
	t.Cleanup(e.srv.Close)
	e.key = e.user("alice", 10)
	return e
}

func withLimit(n int) func(*envOptions) { return func(o *envOptions) { o.limit = n } }

// setWrap makes the server wrap the real handler with wrap (to add
// headers, say).
func (e *env) setWrap(wrap func(http.Handler) http.Handler) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.wrap = wrap
}

func (e *env) serve(w http.ResponseWriter, r *http.Request) {
	var h http.Handler = e.mux
	e.mu.Lock()
	if e.wrap != nil {
		h = e.wrap(h)
	}
	e.mu.Unlock()
	rec := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	at := e.clock.Now()
	h.ServeHTTP(rec, r)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.requests = append(e.requests, arrival{at: at, method: r.Method, path: r.URL.Path, status: rec.status, header: r.Header.Clone()})
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// log returns the requests the server got so far.
func (e *env) log() []arrival {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.requests)
}

// user creates a user with credits and returns a new API key of theirs.
func (e *env) user(owner string, credits int64) string {
	e.t.Helper()
	key, _, err := e.svc.CreateKey(context.Background(), owner)
	is.New(e.t).NoErr(err)
	if credits > 0 {
		_, err = e.svc.Grant(context.Background(), owner, credits, "")
		is.New(e.t).NoErr(err)
	}
	return key
}

// client returns a Client of the test server on virtual time v.
func (e *env) client(v *vclock, opts ...client.Option) *client.Client {
	e.t.Helper()
	c, err := client.New(e.srv.URL, e.key, append([]client.Option{client.WithClock(v), client.WithHTTPClient(e.srv.Client())}, opts...)...)
	is.New(e.t).NoErr(err)
	return c
}

// spend makes n requests with key straight to the handler, as another
// program using the same key would.
func (e *env) spend(key string, n int) {
	e.t.Helper()
	for range n {
		r := httptest.NewRequest("GET", "/api/v1/tasks/nope", nil)
		r.Header.Set("Authorization", "Bearer "+key)
		w := httptest.NewRecorder()
		e.mux.ServeHTTP(w, r)
		is.New(e.t).Equal(w.Code, http.StatusNotFound)
	}
}

// runWorkers runs the service's workers until no task is ready.
func (e *env) runWorkers() {
	for range 100 {
		ran, err := e.svc.RunOnce(context.Background())
		if err != nil {
			e.t.Errorf("RunOnce: %v", err)
			return
		}
		if !ran {
			return
		}
	}
}

// maxInWindow returns the largest number of requests among reqs that
// arrived within one rolling window (any [t, t+window)).
func maxInWindow(reqs []arrival, window time.Duration) int {
	most := 0
	for _, a := range reqs {
		n := 0
		for _, b := range reqs {
			if !b.at.Before(a.at) && b.at.Before(a.at.Add(window)) {
				n++
			}
		}
		most = max(most, n)
	}
	return most
}

func only(reqs []arrival, keep func(arrival) bool) []arrival {
	var out []arrival
	for _, a := range reqs {
		if keep(a) {
			out = append(out, a)
		}
	}
	return out
}

// vclock is virtual time for the clients of a test. It counts the
// goroutines that use it; when every one of them waits on After, it moves
// the manual clock to the earliest wake-up, calls tick, and wakes the
// sleepers that are due. Nothing sleeps for real.
type vclock struct {
	clock *imagegentest.Clock
	tick  func(now time.Time) // called after each move, while no goroutine runs

	mu       sync.Mutex
	running  int
	sleepers []sleeper
	slept    []time.Duration
}

type sleeper struct {
	at time.Time
	ch chan time.Time
}

var _ imagegen.Clock = (*vclock)(nil)

// newVClock returns virtual time used by running goroutines.
func newVClock(clock *imagegentest.Clock, running int) *vclock {
	return &vclock{clock: clock, running: running}
}

func (v *vclock) Now() time.Time { return v.clock.Now() }

func (v *vclock) After(d time.Duration) <-chan time.Time {
	v.mu.Lock()
	defer v.mu.Unlock()
	ch := make(chan time.Time, 1)
	v.slept = append(v.slept, d)
	if d <= 0 {
		ch <- v.clock.Now()
		return ch
	}
	v.sleepers = append(v.sleepers, sleeper{at: v.clock.Now().Add(d), ch: ch})
	v.running--
	v.advance()
	return ch
}

// start counts n more goroutines; done counts one fewer.
func (v *vclock) start(n int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.running += n
}

func (v *vclock) done() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.running--
	v.advance()
}

func (v *vclock) advance() {
	if v.running > 0 || len(v.sleepers) == 0 {
		return
	}
	next := v.sleepers[0].at
	for _, s := range v.sleepers {
		if s.at.Before(next) {
			next = s.at
		}
	}
	v.clock.Set(next)
	if v.tick != nil {
		v.tick(next)
	}
	kept := v.sleepers[:0]
	for _, s := range v.sleepers {
		if s.at.After(next) {
			kept = append(kept, s)
			continue
		}
		s.ch <- next
		v.running++
	}
	v.sleepers = kept
}

// sleeps returns the durations passed to After so far.
func (v *vclock) sleeps() []time.Duration {
	v.mu.Lock()
	defer v.mu.Unlock()
	return slices.Clone(v.slept)
}

func memoryStore(clock imagegen.Clock) imagegen.Store {
	return memory.New(memory.Options{Clock: clock})
}

// failingStore fails the operations a submit and a task query need.
type failingStore struct{ imagegen.Store }

var errBroken = errors.New("disk on fire")

func (failingStore) CreateTask(context.Context, *imagegen.Task) (int64, error) { return 0, errBroken }
func (failingStore) Task(context.Context, string, string) (*imagegen.Task, error) {
	return nil, errBroken
}
