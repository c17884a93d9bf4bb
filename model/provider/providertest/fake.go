package providertest

import (
	"net/http"
	"sync"
	"time"
)

// Answer is a canned answer a fake provider API serves in place of its
// usual one: a status, headers and a body; or, with Hang, no answer at
// all until the client gives up.
type Answer struct {
	Status int
	Header map[string]string
	Body   []byte
	Hang   bool // hold the call as a provider that does not answer would (see Hang)
}

// Serve answers r with a: its headers, its status, then its body; or
// holds r until the client gives up, when a.Hang.
func (a Answer) Serve(w http.ResponseWriter, r *http.Request) {
	if a.Hang {
		Hang(r, nil)
		return
	}
	for k, v := range a.Header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(a.Status)
	_, _ = w.Write(a.Body)
}

// Script is the bookkeeping of a fake provider API: it records every
// call the fake receives (C is the fake's own record of one) with its
// kind ("generate", "submit", "status"...), and hands out the answers
// queued for the next calls of a kind, each once, in order; answers
// queued for the kind "" go to calls of any kind that has none of its
// own. Embedded in a fake, it gives the fake Queue, Calls and Kinds,
// which is what Run needs of it (Fake). It is safe for concurrent use.
type Script[C any] struct {
	mu      sync.Mutex
	calls   []C
	kinds   []string
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
// for kind, or else for any kind; ok is false when none is left.
func (s *Script[C]) Record(kind string, c C) (next Answer, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, c)
	s.kinds = append(s.kinds, kind)
	for _, k := range []string{kind, ""} {
		if q := s.answers[k]; len(q) > 0 {
			next, s.answers[k] = q[0], q[1:]
			return next, true
		}
	}
	return Answer{}, false
}

// Calls returns the calls recorded so far, in order.
func (s *Script[C]) Calls() []C {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]C(nil), s.calls...)
}

// Kinds returns the kinds of the calls recorded so far, in order.
func (s *Script[C]) Kinds() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.kinds...)
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
