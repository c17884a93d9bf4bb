package memory

import (
	"context"
)

// WatchTask returns a channel closed when task id finishes.
func (s *Store) WatchTask(_ context.Context, id string) (<-chan struct{}, func(), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := s.watchers.Add(id)
	stop := func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.watchers.Remove(id, ch)
	}
	return ch, stop, nil
}

// notifyFinished wakes the watchers of id; s.mu is held.
func (s *Store) notifyFinished(id string) {
	s.watchers.Wake(id)
}
