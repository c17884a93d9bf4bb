package throttle

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestDueOnceAnInterval(t *testing.T) {
	var g Gate
	if !g.Due(time.Hour) {
		t.Fatal("a new gate is not due")
	}
	if g.Due(time.Hour) {
		t.Fatal("due again within the interval")
	}
	g.opened = g.opened.Add(-time.Hour) // the interval has passed
	if !g.Due(time.Hour) {
		t.Fatal("not due once the interval has passed")
	}
	if g.Due(time.Hour) {
		t.Fatal("due twice for one interval")
	}
}

func TestNoIntervalIsAlwaysDue(t *testing.T) {
	var g Gate
	for range 3 {
		if !g.Due(0) {
			t.Fatal("a zero interval is not due")
		}
	}
}

func TestOneOfRacingCallersIsDue(t *testing.T) {
	var g Gate
	var due atomic.Int64
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if g.Due(time.Hour) {
				due.Add(1)
			}
		}()
	}
	wg.Wait()
	if n := due.Load(); n != 1 {
		t.Fatalf("%d racing callers were told the chore is due, want 1", n)
	}
}
