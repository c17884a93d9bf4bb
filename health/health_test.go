package health_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen/health"
)

func probe(t *testing.T, mux http.Handler, path string) (int, health.Status) {
	t.Helper()
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
	var st health.Status
	if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil {
		t.Fatalf("%s: body %q: %v", path, w.Body, err)
	}
	return w.Code, st
}

func TestReadinessFollowsTheChecks(t *testing.T) {
	is := is.New(t)
	var storeDown atomic.Bool
	h, err := health.New(health.Config{
		Checks: []health.Check{
			{Name: "store", Check: func(context.Context) error {
				if storeDown.Load() {
					return errors.New("connection refused")
				}
				return nil
			}},
			{Name: "model", Check: func(context.Context) error { return nil }},
		},
		Logger: slog.New(slog.DiscardHandler),
	})
	is.NoErr(err)
	mux := http.NewServeMux()
	h.Register(mux)

	code, st := probe(t, mux, "/readyz")
	is.Equal(code, http.StatusOK)
	is.Equal(st.Status, "ready")

	storeDown.Store(true)
	code, st = probe(t, mux, "/readyz")
	is.Equal(code, http.StatusServiceUnavailable)
	is.Equal(st.Down, []string{"store"})
	is.Equal(len(st.Errors), 0) // no error text unless ShowErrors
	code, _ = probe(t, mux, "/healthz")
	is.Equal(code, http.StatusOK) // liveness touches nothing

	storeDown.Store(false)
	code, _ = probe(t, mux, "/readyz")
	is.Equal(code, http.StatusOK)
}

// A check that hangs counts as down once Timeout has passed: /readyz
// answers then, not later. The test runs in a synctest bubble, whose
// clock moves only when every goroutine waits: the answer comes exactly
// one Timeout after the request, however fast the machine.
func TestAHangingCheckIsDownAfterTheTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		release := make(chan struct{})
		defer close(release)
		const timeout = 50 * time.Millisecond
		h, err := health.New(health.Config{
			Checks:     []health.Check{{Name: "store", Check: func(context.Context) error { <-release; return nil }}},
			Timeout:    timeout,
			ShowErrors: true,
			Logger:     slog.New(slog.DiscardHandler),
		})
		is.NoErr(err)
		mux := http.NewServeMux()
		h.Register(mux)
		start := time.Now()
		code, st := probe(t, mux, "/readyz")
		is.Equal(code, http.StatusServiceUnavailable)
		is.Equal(st.Down, []string{"store"})
		is.True(st.Errors["store"] != "")
		is.Equal(time.Since(start), timeout)
	})
}
