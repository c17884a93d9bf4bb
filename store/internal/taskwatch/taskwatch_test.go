package taskwatch

import "testing"

// closed reports whether ch is closed: a watcher's channel is never sent
// on, only closed.
func closed(ch <-chan struct{}) bool {
	select {
	case _, open := <-ch:
		return !open
	default:
		return false
	}
}

func TestWakeClosesTheTasksWatchersOnly(t *testing.T) {
	var s Set
	a1, a2, b := s.Add("a"), s.Add("a"), s.Add("b")
	if a1 == a2 {
		t.Fatal("two watchers of one task share a channel")
	}
	s.Wake("a")
	if !closed(a1) || !closed(a2) {
		t.Fatal("a watcher of the woken task is still waiting")
	}
	if closed(b) {
		t.Fatal("a watcher of another task was woken")
	}
	if s.Len() != 1 {
		t.Fatalf("%d tasks watched after waking a, want 1", s.Len())
	}
	s.Wake("a")       // nobody left: nothing closed twice
	s.Remove("a", a1) // a stop after the wake
	s.Wake("never")   // nobody ever watched
}

func TestRemoveForgetsWithoutClosing(t *testing.T) {
	var s Set
	kept, gone := s.Add("a"), s.Add("a")
	s.Remove("a", gone)
	s.Remove("a", gone) // twice is harmless
	if closed(gone) {
		t.Fatal("Remove closed the channel")
	}
	s.Wake("a")
	if !closed(kept) {
		t.Fatal("the watcher left was not woken")
	}
	if closed(gone) {
		t.Fatal("a removed watcher was woken")
	}
	last := s.Add("b")
	s.Remove("b", last)
	if s.Len() != 0 {
		t.Fatalf("%d tasks watched after their last watcher left, want 0", s.Len())
	}
}

func TestWakeAll(t *testing.T) {
	var s Set
	chans := []chan struct{}{s.Add("a"), s.Add("a"), s.Add("b")}
	s.WakeAll()
	for i, ch := range chans {
		if !closed(ch) {
			t.Fatalf("watcher %d not woken", i)
		}
	}
	if s.Len() != 0 {
		t.Fatalf("%d tasks watched after WakeAll, want 0", s.Len())
	}
}
