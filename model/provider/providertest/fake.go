package providertest

import (
	"net/http"
	"sync"
	"time"
)

// Answer is a canned answer a fake provider API serves in place of its
// usual one: a status, headers and a body.
type Answer struct {
	Status int
	Header map[string]string
	Body   []byte
}

// Write sends a: its headers, its status, then its body.
func (a Answer) Write(w http.ResponseWriter) {
	for k, v := range a.Header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(a.Status)
	_, _ = w.Write(a.Body)
}

// Script is the bookkeeping of a fake provider API: it records every
// call the fake receives (C is the fake's own record of one) and hands
// out the answers queued for the next calls of a kind, each once, in
// order. A fake that tells no kinds of call apart uses the kind "".
// Embedded in a fake, it gives the fake Queue and Calls. It is safe for
// concurrent use.
type Script[C any] struct {
	mu      sync.Mutex
	calls   []C
	answers map[string][]Answer
}

// Queue adds answers for the next calls of kind, served after those
// already queued.
func (s *Script[C]) Queue(kind string, answers ...Answer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.answers == nil {
		s.answers = map[string][]Answer{}
	}
	s.answers[kind] = append(s.answers[kind], answers...)
}

// Record records c, a call of kind, and takes the next answer queued
// for kind; ok is false when none is left.
func (s *Script[C]) Record(kind string, c C) (next Answer, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, c)
	if q := s.answers[kind]; len(q) > 0 {
		next, s.answers[kind] = q[0], q[1:]
		return next, true
	}
	return Answer{}, false
}

// Calls returns the calls recorded so far, in order.
func (s *Script[C]) Calls() []C {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]C(nil), s.calls...)
}

// HangLimit is how long Hang holds a request at the most, so that a
// client that never gives up cannot block a test for ever.
const HangLimit = 10 * time.Second

// Hang holds a fake's answer to r, as a provider that does not answer
// would, until the client gives up (r's context ends), release is
// closed, or HangLimit passes. It reports whether the client gave up. A
// nil release is never closed.
func Hang(r *http.Request, release <-chan struct{}) (clientLeft bool) {
	select {
	case <-r.Context().Done():
		return true
	case <-release:
	case <-time.After(HangLimit):
	}
	return false
}
