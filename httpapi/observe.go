package httpapi

import (
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/imagegen/imagegen"
)

// RequestIDHeader carries the request id: taken from the request when it
// is valid (1 to 128 letters, digits, '-', '_', '.' or ':'), generated
// otherwise, and always echoed in the response.
const RequestIDHeader = "X-Request-Id"

// noteCaller records the authenticated caller for the request's log
// line. w is the writer that serveObserved handed to the routes.
func noteCaller(w http.ResponseWriter, p Principal) {
	if o, ok := w.(*observed); ok {
		o.rateKey = p.RateKey
	}
}

// requestIDOf is the id serveObserved gave the request written to w.
func requestIDOf(w http.ResponseWriter) string {
	if o, ok := w.(*observed); ok {
		return o.id
	}
	return ""
}

// serveObserved serves r through the routes, then logs the request once
// and reports it to the Observer. Everything it keeps per request lives
// in one allocation (observed). The request id reaches the service's
// context only on requests that change something (submit, cancel), the
// only ones it logs.
func (h *Handler) serveObserved(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	o := &observed{ResponseWriter: w, id: requestID(r.Header.Get(RequestIDHeader))}
	o.idHeader[0] = o.id
	w.Header()[RequestIDHeader] = o.idHeader[:]
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		r = r.WithContext(imagegen.WithRequestID(r.Context(), o.id))
	}
	h.mux.ServeHTTP(o, r)
	took := time.Since(start)

	route := r.Pattern // set by the mux on r
	if route == "" {
		route = "unmatched"
	}
	status := o.Status()
	h.cfg.Observer.HTTPRequest(route, status, took)
	log := h.cfg.Logger
	if !log.Enabled(r.Context(), slog.LevelInfo) {
		return
	}
	log.LogAttrs(r.Context(), slog.LevelInfo, "request",
		slog.String("method", r.Method), slog.String("route", route), slog.Int("status", status),
		slog.Duration("duration", took), slog.String("request_id", o.id), slog.String("key_id", keyID(o.rateKey)))
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

// observed is the writer the routes get: it remembers the status
// written through it and what the log line needs.
type observed struct {
	http.ResponseWriter
	status   int
	id       string    // the request id
	idHeader [1]string // the response header's value, without an allocation of its own
	rateKey  string    // Principal.RateKey, once authenticated
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

// Unwrap lets http.ResponseController reach the connection's writer
// (flushes, deadlines).
func (s *observed) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Flush passes a flush on, for handlers that check http.Flusher.
func (s *observed) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
