// Package taskwatch keeps the channels of the callers waiting for tasks
// to finish, for the stores' WatchTask. A Set holds no lock: each store
// guards its Set with its own mutex.
package taskwatch

// Set holds, per task id, the channels of the task's watchers. The zero
// Set is empty and ready to use.
type Set struct {
	byID map[string]map[chan struct{}]struct{}
}

// Add returns a new channel for a watcher of id; Wake closes it.
func (s *Set) Add(id string) chan struct{} {
	if s.byID == nil {
		s.byID = make(map[string]map[chan struct{}]struct{})
	}
	set := s.byID[id]
	if set == nil {
		set = make(map[chan struct{}]struct{})
		s.byID[id] = set
	}
	ch := make(chan struct{})
	set[ch] = struct{}{}
	return ch
}

// Remove forgets ch, a watcher of id that stopped waiting, without
// closing it. Removing a channel already woken or removed does nothing.
func (s *Set) Remove(id string, ch chan struct{}) {
	set, ok := s.byID[id]
	if !ok {
		return
	}
	delete(set, ch)
	if len(set) == 0 {
		delete(s.byID, id)
	}
}

// Wake closes the channels of id's watchers and forgets them.
func (s *Set) Wake(id string) {
	for ch := range s.byID[id] {
		close(ch)
	}
	delete(s.byID, id)
}

// WakeAll closes every watcher's channel and forgets them all.
func (s *Set) WakeAll() {
	for id := range s.byID {
		s.Wake(id)
	}
}

// Len returns how many tasks have watchers.
func (s *Set) Len() int { return len(s.byID) }
