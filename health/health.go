// Package health answers load balancers' and orchestrators' probes:
//
//	GET /healthz  liveness: 200 {"status":"ok"} while the process serves
//	              HTTP at all; it touches nothing else.
//	GET /readyz   readiness: runs every Check at once, each bounded by
//	              Config.Timeout, and answers 200 {"status":"ready"} or
//	              503 {"status":"unavailable","down":["store"]}.
//
// A failing check is logged when the answer changes (not at every probe).
// The 503 body names what is down; the error text is added only with
// Config.ShowErrors (for an operators' listener, not a public port).
package health

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"
)

// Check is one dependency that readiness needs.
type Check struct {
	Name  string // e.g. "store", "model"
	Check func(ctx context.Context) error
}

// Config configures a Handler.
type Config struct {
	Checks []Check
	// Timeout bounds each check (default 1s), so /readyz answers within
	// about that long even when a dependency hangs.
	Timeout time.Duration
	// ShowErrors adds each failing check's error to the 503 body.
	ShowErrors bool
	Logger     *slog.Logger // default slog.Default()
}

// Handler serves /healthz and /readyz.
type Handler struct {
	cfg      Config
	wasReady atomic.Bool
}

// New returns a Handler, or an error for a check without a name or func.
func New(c Config) (*Handler, error) {
	for _, ch := range c.Checks {
		if ch.Name == "" || ch.Check == nil {
			return nil, errors.New("health: every Check needs a Name and a Check func")
		}
	}
	c.Timeout = cmp.Or(c.Timeout, time.Second)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	h := &Handler{cfg: c}
	h.wasReady.Store(true)
	return h, nil
}

// Register mounts GET /healthz and GET /readyz on mux.
func (h *Handler) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /healthz", h.Live)
	mux.HandleFunc("GET /readyz", h.Ready)
}

// Status is the body of both answers.
type Status struct {
	Status string            `json:"status"`
	Down   []string          `json:"down,omitempty"`
	Errors map[string]string `json:"errors,omitempty"`
}

// Live answers the liveness probe.
func (h *Handler) Live(w http.ResponseWriter, _ *http.Request) {
	write(w, http.StatusOK, Status{Status: "ok"})
}

// Ready runs the checks and answers the readiness probe.
func (h *Handler) Ready(w http.ResponseWriter, r *http.Request) {
	errs := h.run(r.Context())
	if len(errs) == 0 {
		if !h.wasReady.Swap(true) {
			h.cfg.Logger.InfoContext(r.Context(), "ready again")
		}
		write(w, http.StatusOK, Status{Status: "ready"})
		return
	}
	st := Status{Status: "unavailable"}
	for _, ch := range h.cfg.Checks { // in the configured order
		if err, down := errs[ch.Name]; down {
			st.Down = append(st.Down, ch.Name)
			if h.cfg.ShowErrors {
				if st.Errors == nil {
					st.Errors = map[string]string{}
				}
				st.Errors[ch.Name] = err.Error()
			}
		}
	}
	if h.wasReady.Swap(false) {
		h.cfg.Logger.WarnContext(r.Context(), "not ready", "down", st.Down, "errors", errs)
	}
	write(w, http.StatusServiceUnavailable, st)
}

// run runs every check at once and returns the errors by name. A check
// that ignores its context's deadline counts as down when the deadline
// passes; it is left to finish on its own.
func (h *Handler) run(ctx context.Context) map[string]error {
	type result struct {
		name string
		err  error
	}
	ctx, cancel := context.WithTimeout(ctx, h.cfg.Timeout)
	defer cancel()
	results := make(chan result, len(h.cfg.Checks))
	for _, ch := range h.cfg.Checks {
		go func() { results <- result{ch.Name, ch.Check(ctx)} }()
	}
	errs := map[string]error{}
	for _, ch := range h.cfg.Checks {
		errs[ch.Name] = fmt.Errorf("no answer within %v", h.cfg.Timeout)
	}
	for range h.cfg.Checks {
		select {
		case r := <-results:
			if r.err == nil {
				delete(errs, r.name)
			} else {
				errs[r.name] = r.err
			}
		case <-ctx.Done():
			return errs
		}
	}
	return errs
}

func write(w http.ResponseWriter, status int, st Status) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(st)
}
