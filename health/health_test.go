package health_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen/health"
	"github.com/imagegen/imagegen/internal/nettest"
)

// readiness is the probes of a health.New(cfg), logging nowhere, on a
// mux of their own.
func readiness(t *testing.T, cfg health.Config) http.Handler {
	t.Helper()
	cfg.Logger = slog.New(slog.DiscardHandler)
	h, err := health.New(cfg)
	if err != nil {
		t.Fatalf("health.New: %v", err)
	}
	mux := http.NewServeMux()
	h.Register(mux)
	return mux
}

// dial is a check that connects to addr, as a store client does.
func dial(addr string) func(context.Context) error {
	return func(ctx context.Context) error {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err == nil {
			_ = c.Close()
		}
		return err
	}
}

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
	mux := readiness(t, health.Config{
		Checks: []health.Check{
			{Name: "store", Check: func(context.Context) error {
				if storeDown.Load() {
					return errors.New("connection refused")
				}
				return nil
			}},
			{Name: "model", Check: func(context.Context) error { return nil }},
		},
	})

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
		mux := readiness(t, health.Config{
			Checks:     []health.Check{{Name: "store", Check: func(context.Context) error { <-release; return nil }}},
			Timeout:    timeout,
			ShowErrors: true,
		})
		start := time.Now()
		code, st := probe(t, mux, "/readyz")
		is.Equal(code, http.StatusServiceUnavailable)
		is.Equal(st.Down, []string{"store"})
		is.True(st.Errors["store"] != "")
		is.Equal(time.Since(start), timeout)
	})
}

// Each check's state names the cause: a refused connection is not "no
// answer" (before, a client that kept retrying a refused connection until
// the deadline was reported as "no answer within 1s"), an Optional check
// that fails leaves the process ready, and the body always says how
// every check stands.
func TestReadinessNamesTheCause(t *testing.T) {
	is := is.New(t)
	refused := nettest.ClosedAddr(t)
	release := make(chan struct{})
	defer close(release)
	mux := readiness(t, health.Config{
		Checks: []health.Check{
			{Name: "ok", Check: func(context.Context) error { return nil }},
			{Name: "refused", Check: dial(refused)},
			{Name: "retries-until-the-deadline", Check: func(ctx context.Context) error {
				<-ctx.Done() // gives up with its context, as a client that keeps retrying does
				return ctx.Err()
			}},
			{Name: "ignores-its-context", Check: func(context.Context) error { <-release; return nil }},
			{Name: "images", Optional: true, Check: dial(refused)},
		},
		Timeout:    200 * time.Millisecond,
		ShowErrors: true,
	})
	code, st := probe(t, mux, "/readyz")
	is.Equal(code, http.StatusServiceUnavailable)
	is.Equal(st.Checks, map[string]string{
		"ok": "ok", "refused": "connection refused", "retries-until-the-deadline": "timeout",
		"ignores-its-context": "timeout", "images": "connection refused",
	})
	is.Equal(st.Down, []string{"refused", "retries-until-the-deadline", "ignores-its-context"})
	is.Equal(st.Degraded, []string{"images"})
	is.True(strings.HasPrefix(st.Errors["refused"], "connection refused: dial tcp "))
	is.True(strings.HasPrefix(st.Errors["ignores-its-context"], "timeout: no answer within 200ms"))
	is.True(strings.HasPrefix(st.Errors["retries-until-the-deadline"], "timeout: context deadline exceeded"))
}

// An Optional check alone never makes the process unready.
func TestAnOptionalCheckDegradesOnly(t *testing.T) {
	is := is.New(t)
	mux := readiness(t, health.Config{
		Checks: []health.Check{
			{Name: "store", Check: func(context.Context) error { return nil }},
			{Name: "blobs", Optional: true, Check: func(context.Context) error { return errors.New("access denied") }},
		},
	})
	code, st := probe(t, mux, "/readyz")
	is.Equal(code, http.StatusOK)
	is.Equal(st.Status, "ready")
	is.Equal(st.Degraded, []string{"blobs"})
	is.Equal(st.Checks, map[string]string{"store": "ok", "blobs": "failed"})
	is.Equal(len(st.Errors), 0) // no error text unless ShowErrors
}

// A check runs once at a time: probes that come while it hangs wait for
// that run and start no other, so a hung dependency holds one goroutine
// and sees one check, however many probes come (before, each probe
// started a run of its own and left it hanging). Once the run answers,
// the next probe starts a new one.
func TestAHangingCheckRunsOnceAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		release := make(chan struct{})
		var runs atomic.Int32
		mux := readiness(t, health.Config{
			Checks: []health.Check{{Name: "store", Check: func(context.Context) error {
				runs.Add(1)
				<-release // ignores its context
				return nil
			}}},
			Timeout: 50 * time.Millisecond,
		})
		for range 20 {
			code, _ := probe(t, mux, "/readyz")
			is.Equal(code, http.StatusServiceUnavailable)
		}
		is.Equal(runs.Load(), int32(1))
		close(release)
		synctest.Wait()
		code, _ := probe(t, mux, "/readyz")
		is.Equal(code, http.StatusOK)
		is.Equal(runs.Load(), int32(2))
	})
}
