package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"testing"

	"github.com/imagegen/imagegen"
)

// headerOnly is a ResponseWriter that keeps its headers and nothing
// else, allocating nothing per request.
type headerOnly http.Header

func (w headerOnly) Header() http.Header         { return http.Header(w) }
func (w headerOnly) Write(b []byte) (int, error) { return len(b), nil }
func (w headerOnly) WriteHeader(int)             {}

// The request id reaches the context of requests that change something
// (the service records it on the tasks they submit), not of GET and
// HEAD requests, and it costs no allocation beyond the request's record
// (observed): its context is part of that record.
func TestServeObservedRequestID(t *testing.T) {
	h := &Handler{cfg: Config{Logger: slog.New(slog.DiscardHandler), Observer: imagegen.NopObserver{}}}
	w := headerOnly{}
	var seen string
	next := http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { seen = imagegen.RequestID(r.Context()) })
	for _, tc := range []struct{ method, want string }{{http.MethodPost, "req-1"}, {http.MethodDelete, "req-1"}, {http.MethodGet, ""}, {http.MethodHead, ""}} {
		r := (&http.Request{Method: tc.method, Header: http.Header{RequestIDHeader: {"req-1"}}}).WithContext(context.Background())
		h.serveObserved(w, r, next)
		if seen != tc.want {
			t.Errorf("%s: the handler's context has request id %q, want %q", tc.method, seen, tc.want)
		}
	}
	r := (&http.Request{Method: http.MethodPost, Header: http.Header{RequestIDHeader: {"req-1"}}}).WithContext(context.Background())
	if n := testing.AllocsPerRun(100, func() { h.serveObserved(w, r, next) }); n != 1 {
		t.Fatalf("%v allocations per request, want 1 (its record)", n)
	}
}
