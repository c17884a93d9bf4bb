package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/imagegen/imagegen"
)

// Observer is told of every API answer, for metrics; *metrics.Metrics is
// one. route is the matched route pattern (such as
// "GET /api/v1/tasks/{task_id}"), never the raw path; a 429 code is a
// rate-limited request. It must be quick and safe for concurrent use.
type Observer interface {
	HTTPRequest(route string, code int, took time.Duration)
}

// RequestIDHeader carries the request id: taken from the request when it
// is valid (1 to 128 letters, digits, '-', '_', '.' or ':'), generated
// otherwise, and always echoed in the response.
const RequestIDHeader = "X-Request-Id"

// callInfo is what the handlers learn about a request that its log line
// needs: filled by authenticate, read once the answer is written.
type callInfo struct {
	rateKey string // Principal.RateKey, "" before authentication
}

type callInfoKey struct{}

// noteCaller records the authenticated caller for the request's log line.
func noteCaller(ctx context.Context, p Principal) {
	if info, ok := ctx.Value(callInfoKey{}).(*callInfo); ok {
		info.rateKey = p.RateKey
	}
}

// serveObserved serves r through the routes, then logs the request once
// and reports it to the Observer.
func (h *Handler) serveObserved(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	id := requestID(r.Header.Get(RequestIDHeader))
	w.Header().Set(RequestIDHeader, id)
	info := &callInfo{}
	r = r.WithContext(context.WithValue(imagegen.WithRequestID(r.Context(), id), callInfoKey{}, info))
	rec := &statusRecorder{ResponseWriter: w}
	h.mux.ServeHTTP(rec, r)
	took := time.Since(start)

	route := r.Pattern // set by the mux on r
	if route == "" {
		route = "unmatched"
	}
	status := rec.Status()
	if h.cfg.Observer != nil {
		h.cfg.Observer.HTTPRequest(route, status, took)
	}
	log := h.cfg.Logger
	if !log.Enabled(r.Context(), slog.LevelInfo) {
		return
	}
	log.LogAttrs(r.Context(), slog.LevelInfo, "request",
		slog.String("method", r.Method), slog.String("route", route), slog.Int("status", status),
		slog.Duration("duration", took), slog.String("request_id", id), slog.String("key_id", keyID(info.rateKey)))
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

// statusRecorder remembers the status written through it.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Status is the status written, 200 if the handler wrote nothing.
func (s *statusRecorder) Status() int {
	if s.status == 0 {
		return http.StatusOK
	}
	return s.status
}

// Unwrap lets http.ResponseController reach the connection's writer
// (flushes, deadlines).
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Flush passes a flush on, for handlers that check http.Flusher.
func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
