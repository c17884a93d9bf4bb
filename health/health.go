// Package health answers load balancers' and orchestrators' probes:
//
//	GET /healthz  liveness: 200 {"status":"ok"} while the process serves
//	              HTTP at all; it touches nothing else.
//	GET /readyz   readiness: runs every Check at once, each bounded by
//	              Config.Timeout, and answers 200 {"status":"ready",...}
//	              or 503 {"status":"unavailable","down":["store"],...}.
//
// Both answers carry "checks", the state of every check by name: "ok",
// or why it failed in a word: "connection refused", "timeout" (no answer
// in time) or "failed" (any other error). A check marked Optional (the
// image store, in package server) does not make the process unready: its
// failure is listed under "degraded" and the answer stays 200.
//
// A failing check is logged, with its error, when the answer changes
// (not at every probe). The error text of each failing check is added
// under "errors" only with Config.ShowErrors, for a listener that only
// trusted people reach: an error may name hosts, addresses or parts of a
// URL. imagegen serve and worker never set it, the admin listener
// included.
//
// A check gets a context that ends a tenth of Timeout before the answer
// is due, so a check that gives up with its context reports its own
// error (say, the refused connection its client kept retrying); one that
// does not answer at all is "timeout: no answer within <Timeout>".
//
// A check runs once at a time: a probe that comes while a check is still
// running (a slow dependency, or a check that ignores its context) waits
// for that run's answer instead of starting another. However often
// /readyz is asked, and by whom (it is on the public port too), a
// dependency sees at most one check at a time from a process, and a hung
// check holds one goroutine, not one a probe.
package health

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Check is one dependency that readiness needs.
type Check struct {
	Name  string // e.g. "store", "model"
	Check func(ctx context.Context) error
	// Optional: a failure is reported (under "degraded") but the
	// process stays ready: for a dependency whose outage hits every
	// process alike, so that taking this one out of service helps no
	// one.
	Optional bool
}

// Config configures a Handler.
type Config struct {
	Checks []Check
	// Timeout bounds each check (default 1s), so /readyz answers within
	// about that long even when a dependency hangs.
	Timeout time.Duration
	// ShowErrors adds each failing check's error to the body (see the
	// package doc: only where trusted people alone can ask).
	ShowErrors bool
	Logger     *slog.Logger // default slog.Default()
}

// Handler serves /healthz and /readyz.
type Handler struct {
	cfg Config
	// last sums up the last answer (what was down, what degraded), to
	// log only its changes.
	last atomic.Pointer[string]

	mu       sync.Mutex
	inFlight []*flight // by index in cfg.Checks: the check's running run, or nil
}

// flight is one run of a check; done is closed once err is set.
type flight struct {
	done chan struct{}
	err  error
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
	h := &Handler{cfg: c, inFlight: make([]*flight, len(c.Checks))}
	allWell := fmt.Sprint([]string(nil), []string(nil))
	h.last.Store(&allWell)
	return h, nil
}

// Register mounts GET /healthz and GET /readyz on mux.
func (h *Handler) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /healthz", h.Live)
	mux.HandleFunc("GET /readyz", h.Ready)
}

// Status is the body of both answers.
type Status struct {
	Status string `json:"status"`
	// Checks is the state of every check: "ok", "connection refused",
	// "timeout" or "failed" (readiness only).
	Checks map[string]string `json:"checks,omitempty"`
	// Down lists the failed checks that make the process unready.
	Down []string `json:"down,omitempty"`
	// Degraded lists the failed Optional checks.
	Degraded []string `json:"degraded,omitempty"`
	// Errors holds each failed check's error (Config.ShowErrors only).
	Errors map[string]string `json:"errors,omitempty"`
}

// The words of Status.Checks.
const (
	StateOK                = "ok"
	StateConnectionRefused = "connection refused"
	StateTimeout           = "timeout"
	StateFailed            = "failed"
)

// State names what err says of a dependency in a word: StateOK for nil,
// StateConnectionRefused when its connection was refused (however deep
// in err), StateTimeout when it did not answer in time, else
// StateFailed.
func State(err error) string {
	var ne net.Error
	switch {
	case err == nil:
		return StateOK
	case errors.Is(err, syscall.ECONNREFUSED):
		return StateConnectionRefused
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, errNoAnswer), errors.As(err, &ne) && ne.Timeout():
		return StateTimeout
	default:
		return StateFailed
	}
}

// errNoAnswer is the error of a check that did not return in time.
var errNoAnswer = errors.New("no answer")

// Live answers the liveness probe.
func (h *Handler) Live(w http.ResponseWriter, _ *http.Request) {
	write(w, http.StatusOK, Status{Status: "ok"})
}

// Ready runs the checks and answers the readiness probe.
func (h *Handler) Ready(w http.ResponseWriter, r *http.Request) {
	errs := h.run(r.Context())
	st := Status{Status: "ready", Checks: make(map[string]string, len(h.cfg.Checks))}
	for _, ch := range h.cfg.Checks { // in the configured order
		err, failed := errs[ch.Name]
		st.Checks[ch.Name] = State(err)
		if !failed {
			continue
		}
		if ch.Optional {
			st.Degraded = append(st.Degraded, ch.Name)
		} else {
			st.Down = append(st.Down, ch.Name)
		}
		if h.cfg.ShowErrors {
			if st.Errors == nil {
				st.Errors = map[string]string{}
			}
			st.Errors[ch.Name] = State(err) + ": " + err.Error()
		}
	}
	ready := len(st.Down) == 0
	if summary := fmt.Sprint(st.Down, st.Degraded); *h.last.Swap(&summary) != summary {
		h.logChange(r.Context(), ready, st, errs)
	}
	if !ready {
		st.Status = "unavailable"
		write(w, http.StatusServiceUnavailable, st)
		return
	}
	write(w, http.StatusOK, st)
}

// logChange logs a change of the answer: ready again, not ready, or
// ready with other checks failing.
func (h *Handler) logChange(ctx context.Context, ready bool, st Status, errs map[string]error) {
	switch {
	case ready && len(errs) == 0:
		h.cfg.Logger.InfoContext(ctx, "ready again")
	case ready:
		h.cfg.Logger.WarnContext(ctx, "ready, degraded", "degraded", st.Degraded, "errors", errs)
	default:
		h.cfg.Logger.WarnContext(ctx, "not ready", "down", st.Down, "degraded", st.Degraded, "errors", errs)
	}
}

// run runs every check at once, or joins its run in flight, and returns
// the errors by name. Each check's context ends a tenth of Timeout after
// its run started, so one that gives up with it reports its own error; a
// check that has not answered when Timeout passes counts as down
// (errNoAnswer) and is left to finish on its own, the next probes
// waiting for it.
func (h *Handler) run(ctx context.Context) map[string]error {
	ctx, cancel := context.WithTimeout(ctx, h.cfg.Timeout)
	defer cancel()
	flights := make([]*flight, len(h.cfg.Checks))
	errs := map[string]error{}
	for i, ch := range h.cfg.Checks {
		flights[i] = h.start(ctx, i)
		errs[ch.Name] = fmt.Errorf("%w within %v", errNoAnswer, h.cfg.Timeout)
	}
	for _, f := range flights {
		select {
		case <-f.done:
		case <-ctx.Done():
		}
	}
	for i, f := range flights { // those that answered in time
		select {
		case <-f.done:
			if name := h.cfg.Checks[i].Name; f.err == nil {
				delete(errs, name)
			} else {
				errs[name] = f.err
			}
		default:
		}
	}
	return errs
}

// start returns check i's run in flight, or starts one. The run's
// context keeps ctx's values but not its end: the probe that started it
// may go away while others wait for its answer.
func (h *Handler) start(ctx context.Context, i int) *flight {
	h.mu.Lock()
	defer h.mu.Unlock()
	if f := h.inFlight[i]; f != nil {
		return f
	}
	f := &flight{done: make(chan struct{})}
	h.inFlight[i] = f
	go func() {
		checkCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.cfg.Timeout-h.cfg.Timeout/10)
		defer cancel()
		f.err = h.cfg.Checks[i].Check(checkCtx)
		h.mu.Lock()
		h.inFlight[i] = nil
		h.mu.Unlock()
		close(f.done)
	}()
	return f
}

func write(w http.ResponseWriter, status int, st Status) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(st)
}
