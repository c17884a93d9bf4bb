package memory

import (
	"context"
)

// WatchTask returns a channel closed when task id finishes.
func (s *Store) WatchTask(_ context.Context, id string) (<-chan struct{}, func(), error) {
	ch := make(chan struct{})
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.watchers == nil {
		s.watchers = make(map[string]map[chan struct{}]struct{})
	}
	set := s.watchers[id]
	if set == nil {
		set = make(map[chan struct{}]struct{})
		s.watchers[id] = set
	}
	set[ch] = struct{}{}
	stop := func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if set, ok := s.watchers[id]; ok {
			delete(set, ch)
			if len(set) == 0 {
				delete(s.watchers, id)
			}
		}
	}
	return ch, stop, nil
}

// notifyFinished wakes the watchers of id; s.mu is held.
func (s *Store) notifyFinished(id string) {
	for ch := range s.watchers[id] {
		close(ch)
	}
	delete(s.watchers, id)
}
