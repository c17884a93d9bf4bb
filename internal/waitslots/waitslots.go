// Package waitslots bounds the long waits (long-polls) that one holder
// (a user, an owner) keeps open at once in one process: each wait takes a
// slot of its holder's before it starts and gives it back when it ends,
// and a holder with none free is answered at once instead. The console
// counts its users' task-page polls with it, the API its owners'
// "Prefer: wait" polls and OpenAI-compatible requests.
package waitslots

import "sync"

// Slots counts the waits each holder has open. Make one with New; it is
// safe for concurrent use.
type Slots struct {
	max  int
	mu   sync.Mutex
	held map[string]int // only holders with a wait open
}

// New returns Slots that allow each holder max waits at once; a
// negative max allows any number (Take always succeeds), zero none.
func New(max int) *Slots { return &Slots{max: max} }

// Max is the number of waits each holder may have open (negative: no
// bound).
func (s *Slots) Max() int { return s.max }

// Take holds one of key's slots and reports true, or reports false when
// key holds Max already. Each true must be matched by one Give (defer it).
func (s *Slots) Take(key string) bool {
	if s.max < 0 {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held[key] >= s.max {
		return false
	}
	if s.held == nil {
		s.held = make(map[string]int)
	}
	s.held[key]++
	return true
}

// Give releases one of key's slots, taken by Take.
func (s *Slots) Give(key string) {
	if s.max < 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held[key]--; s.held[key] <= 0 {
		delete(s.held, key) // the map holds only holders that are waiting
	}
}

// Held is how many waits key has open.
func (s *Slots) Held(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held[key]
}
