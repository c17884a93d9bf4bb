package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/health"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/server"
	"github.com/imagegen/imagegen/store/memory"
)

// flakyStore is a store whose Ping fails while down is set.
type flakyStore struct {
	imagegen.Store
	down atomic.Bool
}

func (s *flakyStore) Ping(ctx context.Context) error {
	if s.down.Load() {
		return errors.New("dial tcp 10.0.0.5:6379: connection refused")
	}
	return s.Store.Ping(ctx)
}

// brokenModel refuses to plan anything: its configuration is not whole.
type brokenModel struct{ imagegen.Model }

func (brokenModel) Plan(imagegen.Request) (imagegen.Plan, error) {
	return imagegen.Plan{}, errors.New("no provider configured")
}

func probe(t *testing.T, h http.Handler, path string) (int, health.Status, string) {
	t.Helper()
	w := do(t, h, "GET", path, "", "")
	var st health.Status
	if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil {
		t.Fatalf("GET %s: %d %q is not a JSON status: %v", path, w.Code, w.Body.String(), err)
	}
	return w.Code, st, w.Body.String()
}

// answersProbes checks that h answers live and ready: 200, ok and ready.
func answersProbes(t *testing.T, h http.Handler, live, ready string) {
	t.Helper()
	if code, st, body := probe(t, h, live); code != http.StatusOK || st.Status != "ok" {
		t.Fatalf("GET %s: %d %s, want 200 ok", live, code, body)
	}
	if code, st, body := probe(t, h, ready); code != http.StatusOK || st.Status != "ready" {
		t.Fatalf("GET %s: %d %s, want 200 ready", ready, code, body)
	}
}

// Register mounts /healthz and /readyz next to the API, without a key;
// /readyz follows the store and names what is down, never its error.
func TestRegisterMountsTheProbes(t *testing.T) {
	is := is.New(t)
	store := &flakyStore{Store: testenv.Memory(t, memory.Config{})}
	srv, err := server.New(ctx, config(store))
	is.NoErr(err)
	mux := http.NewServeMux()
	srv.Register(mux)

	for _, h := range []http.Handler{mux, srv} { // mounted, or the Server itself
		answersProbes(t, h, "/healthz", "/readyz")

		store.down.Store(true)
		code, st, body := probe(t, h, "/readyz")
		is.Equal(code, http.StatusServiceUnavailable)
		is.Equal(st.Status, "unavailable")
		is.Equal(st.Down, []string{"store"})
		is.True(!strings.Contains(body, "connection refused")) // the serving port shows no error text
		code, _, _ = probe(t, h, "/healthz")
		is.Equal(code, http.StatusOK) // liveness touches nothing

		store.down.Store(false)
		code, _, _ = probe(t, h, "/readyz")
		is.Equal(code, http.StatusOK) // ready again, no restart
	}
}

// Readiness checks the model where workers run, and the app's own checks.
func TestReadinessChecksTheModelAndTheAppsChecks(t *testing.T) {
	is := is.New(t)
	c := config(testenv.Memory(t, memory.Config{}))
	c.Service.Model = brokenModel{c.Service.Model}
	c.ReadyChecks = []health.Check{{Name: "app-db", Check: func(context.Context) error { return errors.New("down") }}}
	srv, err := server.New(ctx, c)
	is.NoErr(err)
	code, st, _ := probe(t, srv, "/readyz")
	is.Equal(code, http.StatusServiceUnavailable)
	is.Equal(st.Down, []string{"model", "app-db"})

	c.NoWorkers = true // an API-only process runs no generation: its model is not checked
	srv, err = server.New(ctx, c)
	is.NoErr(err)
	_, st, _ = probe(t, srv, "/readyz")
	is.Equal(st.Down, []string{"app-db"})
}

// The probes can move, or be left to an app that answers those paths.
func TestProbesMovedOrLeftOut(t *testing.T) {
	is := is.New(t)
	c := config(testenv.Memory(t, memory.Config{}))
	c.LivePath, c.ReadyPath = "/ops/live", "/ops/ready"
	srv, err := server.New(ctx, c)
	is.NoErr(err)
	mux := http.NewServeMux()
	srv.Register(mux)
	answersProbes(t, mux, "/ops/live", "/ops/ready")
	is.Equal(do(t, mux, "GET", "/healthz", "", "").Code, http.StatusNotFound)

	c = config(testenv.Memory(t, memory.Config{}))
	c.NoProbes = true
	srv, err = server.New(ctx, c)
	is.NoErr(err)
	mux = http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("the app's own")) })
	srv.Register(mux) // no second pattern for /healthz: no panic
	is.Equal(do(t, mux, "GET", "/healthz", "", "").Body.String(), "the app's own")
	is.Equal(do(t, mux, "GET", "/readyz", "", "").Code, http.StatusNotFound)
	is.True(do(t, srv, "GET", "/readyz", "", "").Code != http.StatusOK) // the API's 404, not a probe

	for _, edit := range []func(*server.Config){
		func(c *server.Config) { c.LivePath = "healthz" },
		func(c *server.Config) { c.ReadyPath = "/ready/{x}" },
		func(c *server.Config) { c.LivePath, c.ReadyPath = "/probe", "/probe" },
		func(c *server.Config) { c.ReadyChecks = []health.Check{{Name: "no func"}} },
	} {
		c := config(testenv.Memory(t, memory.Config{}))
		edit(&c)
		_, err := server.New(ctx, c)
		is.True(err != nil)
	}
}
