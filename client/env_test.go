package client_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/client"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/internal/testenv/apitest"
	"github.com/imagegen/imagegen/store/memory"
)

// The tests that involve time run in a synctest bubble (testing/synctest):
// the client, the real API handler, its store, limiter and long polls all
// use the time package, whose clock in a bubble is fake and moves on only
// when every goroutine of the test (client and server alike) is blocked.
// So a Wait that polls for three minutes runs at once, deterministically,
// and the server's time is the client's. The client talks to the server
// over an in-memory network (net.Pipe), as a bubble requires; the Example
// uses a loopback httptest server.

// env is the real API handler (httpapi on the memory store, a scripted
// model, the memory limiter) behind an http.Server on an in-memory
// network, which logs every request it gets. Create it in a bubble.
type env struct {
	t     *testing.T
	svc   *imagegen.Service
	model *imagegentest.Model
	mux   *http.ServeMux // the real handler, for requests made around the server
	srv   *http.Server
	hc    *http.Client // dials the server
	base  string       // the server's URL
	key   string       // a key of "alice", who has 10 credits
	stack *apitest.Stack

	mu       sync.Mutex
	requests []arrival
	wrap     func(http.Handler) http.Handler
}

// arrival is one request the server got.
type arrival struct {
	at     time.Time
	method string
	path   string
	query  string
	status int
	header http.Header // as the client sent it
}

type envOptions struct {
	limit int
	store func(testing.TB) imagegen.Store
}

func newEnv(t *testing.T, opts ...func(*envOptions)) *env {
	t.Helper()
	o := envOptions{limit: 1000}
	for _, f := range opts {
		f(&o)
	}
	cfg := apitest.Config{Limit: o.limit}
	if o.store != nil {
		cfg.Store = o.store(t)
	}
	s := apitest.New(t, cfg)

	ln := newPipeListener()
	tr := &http.Transport{DialContext: ln.dial}
	e := &env{
		t: t, svc: s.Service, model: s.Model, mux: s.Mux, stack: s, base: "http://imagegen.test",
		hc: &http.Client{Transport: tr},
	}
	e.srv = &http.Server{Handler: http.HandlerFunc(e.serve)}
	go func() { _ = e.srv.Serve(ln) }()
	t.Cleanup(func() {
		_ = e.srv.Close()
		tr.CloseIdleConnections()
	})
	e.key = e.user("alice", 10)
	return e
}

// user creates a user with credits and returns a new API key of theirs.
func (e *env) user(owner string, credits int64) string { return e.stack.User(owner, credits) }

func withLimit(n int) func(*envOptions) { return func(o *envOptions) { o.limit = n } }

// inBubble runs test in a synctest bubble with a new env made there with
// opts.
func inBubble(t *testing.T, test func(t *testing.T, e *env), opts ...func(*envOptions)) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) { test(t, newEnv(t, opts...)) })
}

// waitOut submits fox with c, has the workers end it after d, and returns
// the task as c.Wait got it.
func waitOut(t *testing.T, e *env, c *client.Client, d time.Duration) *client.Task {
	t.Helper()
	is := is.New(t)
	sub, err := c.Submit(context.Background(), fox)
	is.NoErr(err)
	e.finishAfter(d)
	task, err := c.Wait(context.Background(), sub.TaskID)
	is.NoErr(err)
	return task
}

// submitEach submits req n times with c and returns the task ids, oldest
// first.
func submitEach(t *testing.T, c *client.Client, req imagegen.Request, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		sub, err := c.Submit(context.Background(), req)
		is.New(t).NoErr(err)
		ids[i] = sub.TaskID
	}
	return ids
}

// setWrap makes the server wrap the real handler (to change headers, say).
func (e *env) setWrap(wrap func(http.Handler) http.Handler) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.wrap = wrap
}

func (e *env) serve(w http.ResponseWriter, r *http.Request) {
	at, sent := time.Now(), r.Header.Clone()
	var h http.Handler = e.mux
	e.mu.Lock()
	if e.wrap != nil {
		h = e.wrap(h)
	}
	e.mu.Unlock()
	rec := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	h.ServeHTTP(rec, r)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.requests = append(e.requests, arrival{at: at, method: r.Method, path: r.URL.Path, query: r.URL.RawQuery, status: rec.status, header: sent})
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// log returns the requests the server got so far, once every request in
// flight has been handled (the server logs a request after answering it).
func (e *env) log() []arrival {
	synctest.Wait()
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.requests)
}

// client returns a Client of the server with alice's key.
func (e *env) client(opts ...client.Option) *client.Client {
	e.t.Helper()
	return e.clientFor(e.base, e.key, opts...)
}

func (e *env) clientFor(base, key string, opts ...client.Option) *client.Client {
	e.t.Helper()
	c, err := client.New(base, key, append([]client.Option{client.WithHTTPClient(e.hc)}, opts...)...)
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

// finishAfter runs the service's workers once d has passed: the tasks
// submitted by then end (as the scripted model says).
func (e *env) finishAfter(d time.Duration) {
	ctx := e.t.Context()
	go func() {
		select {
		case <-time.After(d):
			e.runWorkers()
		case <-ctx.Done():
		}
	}()
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

// ignorePrefer makes the server one without the long-poll extension: it
// never sees the Prefer header (the log still shows it was sent).
func ignorePrefer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r = r.Clone(r.Context())
		r.Header.Del("Prefer")
		next.ServeHTTP(w, r)
	})
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

// sleepLog is the time package's clock (fake in a bubble) that records
// every wait the client asks of it.
type sleepLog struct {
	mu    sync.Mutex
	slept []time.Duration
}

var _ imagegen.Clock = (*sleepLog)(nil)

func (*sleepLog) Now() time.Time { return time.Now() }

func (s *sleepLog) After(d time.Duration) <-chan time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.slept = append(s.slept, d)
	return time.After(d)
}

func (s *sleepLog) sleeps() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.slept)
}

// pipeListener is an in-memory network: dial hands the server one end of
// a net.Pipe.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

func (l *pipeListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	server, client := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// withFailingStore gives the service a failingStore.
func withFailingStore(o *envOptions) {
	o.store = func(t testing.TB) imagegen.Store { return failingStore{testenv.Memory(t, memory.Config{})} }
}

// failingStore fails the operations a submit and a task query need.
type failingStore struct{ imagegen.Store }

var errBroken = errors.New("disk on fire")

func (failingStore) CreateTask(context.Context, *imagegen.Task, imagegen.CreateParams) (int64, error) {
	return 0, errBroken
}
func (failingStore) Task(context.Context, string, string) (*imagegen.Task, error) {
	return nil, errBroken
}
