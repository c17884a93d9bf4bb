package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/imagegen/imagegen/internal/logbuf"
	"github.com/imagegen/imagegen/internal/requestctx"
)

// RequestIDHeader carries the request id: taken from the request when it
// is valid (1 to 128 letters, digits, '-', '_', '.' or ':'), generated
// otherwise, and always echoed in the response.
const RequestIDHeader = "X-Request-Id"

// observedOf is the record serveObserved keeps for the request whose
// context is ctx (nil outside the API's handlers).
func observedOf(ctx context.Context) *observed {
	o, _ := ctx.Value(observedKey{}).(*observed)
	return o
}

// requestIDOf is the id serveObserved gave the request of ctx.
func requestIDOf(ctx context.Context) string {
	if o := observedOf(ctx); o != nil {
		return o.id
	}
	return ""
}

// serveObserved serves r with next (the routes, or the one route that
// the app's mux matched), then logs the request once and reports it to
// the Observer. Everything it keeps per request lives
// in one allocation (observed), which is also the request's context: the
// handlers find the caller there (PrincipalFrom). The request id reaches
// the service's context only on requests that change something (submit,
// cancel), the only ones it logs.
func (h *Handler) serveObserved(w http.ResponseWriter, r *http.Request, next http.Handler) {
	start := time.Now()
	o := &observed{ResponseWriter: w, id: requestID(headerValue(r.Header, RequestIDHeader))}
	o.idHeader[0] = o.id
	w.Header()[RequestIDHeader] = o.idHeader[:]
	ctx := r.Context()
	log := h.cfg.Logger
	logged := log.Enabled(ctx, slog.LevelInfo)
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		o.request = requestctx.Request{ID: o.id} // what imagegen.WithRequestID would add, kept in o
		o.hasRequest = true
		if logged {
			o.request.Submits = o // a task submitted goes on the request's line (imagegen.WithRequest)
		}
	}
	o.ctx = requestContext{Context: ctx, o: o}
	o.req = *r.WithContext(&o.ctx) // inlined, its copy stays on the stack: the request lives in o
	r = &o.req
	next.ServeHTTP(o, r)
	// The monotonic clock alone (time.Now reads the wall clock too), and
	// the line's time from it: the wall clock at start moved on by took.
	took := time.Since(start)
	end := start.Add(took)

	route := r.Pattern // set on r by the mux that matched it
	if route == "" {
		route = "unmatched"
	}
	status := o.Status()
	h.cfg.Observer.HTTPRequest(route, status, took)
	if !logged {
		return
	}
	attrs := [...]slog.Attr{slog.String("method", r.Method), slog.String("route", routePath(route)),
		slog.Int("status", status), logbuf.Duration(log.Handler(), "duration", took), slog.String("request_id", o.id),
		slog.String("key_id", h.keyIDOf(o.principal.RateKey)),
		slog.String("task_id", o.taskID), slog.String("model", o.model), slog.Int64("cost", o.cost)}
	n := len(attrs)
	if o.taskID == "" {
		n -= 3 // no task submitted
	}
	logbuf.LogEnabledAt(&o.ctx, log, end, slog.LevelInfo, "request", attrs[:n]...) // logged: Enabled said yes
}

// routePath is a route pattern without its method ("GET
// /api/v1/tasks/{task_id}" logs as route=/api/v1/tasks/{task_id} beside
// method=GET): the line says the method once, and a value without a
// space needs no quoting in the text format.
func routePath(pattern string) string {
	if _, path, ok := strings.Cut(pattern, " "); ok {
		return path
	}
	return pattern
}

// keyID is a short, non-reversible id of a credential's rate key (for
// API keys, a hash of the key record's id; never the key): enough to tell
// callers apart in logs.
func keyID(rateKey string) string {
	if rateKey == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(rateKey))
	return hex.EncodeToString(sum[:6])
}

// keyIDOf is keyID(rateKey), made once per rate key while it keeps its
// slot in h.keyIDs; no key, no id.
func (h *Handler) keyIDOf(rateKey string) string {
	if rateKey == "" {
		return ""
	}
	return h.keyIDs.Of(rateKey)
}

// requestID returns the incoming id if it is valid, else a new one.
func requestID(incoming string) string {
	if validRequestID(incoming) {
		return incoming
	}
	return newRequestID()
}

func validRequestID(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.', c == ':':
		default:
			return false
		}
	}
	return true
}

// newRequestID is 32 random hex digits. Request ids need to be unique,
// not secret, so the runtime's fast generator serves.
func newRequestID() string {
	var raw [16]byte
	for i := 0; i < 16; i += 8 {
		v := rand.Uint64()
		for j := range 8 {
			raw[i+j] = byte(v >> (8 * j))
		}
	}
	return hex.EncodeToString(raw[:])
}

// observed is the writer the routes get: it remembers the status
// written through it and what the log line needs. It also holds the
// request's context (ctx), the request the routes are given (req, r with
// ctx: what r.WithContext would allocate) and the values of the headers
// the API sets on every answer, so that a request costs no allocation
// for them.
type observed struct {
	http.ResponseWriter
	status   int
	id       string    // the request id
	idHeader [1]string // the response header's value, without an allocation of its own
	// principal is the authenticated caller (authenticated says there is one).
	principal     Principal
	authenticated bool
	// The RateLimit-Policy and RateLimit values (limitRate).
	ratePolicy, rateLimit [1]string
	ctx                   requestContext
	req                   http.Request
	// The request's id and SubmitLogger as ctx gives them to the service
	// (imagegen.WithRequest), on the requests that change something
	// (hasRequest); on GET and HEAD, ctx passes their key on.
	request    requestctx.Request
	hasRequest bool
	// The task the request submitted, for its line (LogSubmitted).
	taskID, model string
	cost          int64
}

type observedKey struct{}

// requestContext is the request's context with its observed record
// added, and on requests that change something the request's id and
// SubmitLogger (what context.WithValue and imagegen.WithRequest would
// make, without an allocation of their own).
type requestContext struct {
	context.Context
	o *observed
}

func (c *requestContext) Value(key any) any {
	switch key.(type) {
	case observedKey:
		return c.o
	case requestctx.Key:
		if c.o.hasRequest {
			return &c.o.request
		}
	}
	return c.Context.Value(key)
}

func (s *observed) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *observed) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Status is the status written, 200 if the handler wrote nothing.
func (s *observed) Status() int {
	if s.status == 0 {
		return http.StatusOK
	}
	return s.status
}

// LogSubmitted implements imagegen.SubmitLogger: the request's line
// carries the task it submitted (task_id, model, cost) instead of the
// service writing a "task submitted" line of its own. A request submits
// one task; should it submit another, the service logs that one.
func (s *observed) LogSubmitted(taskID, model string, cost int64) bool {
	if s.taskID != "" {
		return false
	}
	s.taskID, s.model, s.cost = taskID, model, cost
	return true
}

// Unwrap lets http.ResponseController reach the connection's writer
// (flushes, deadlines).
func (s *observed) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Flush passes a flush on, for handlers that check http.Flusher.
func (s *observed) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
