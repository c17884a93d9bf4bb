package drain

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A wait under way when Drain is called ends at once and answers with
// now; later waits do not wait at all; Drain twice is fine.
func TestDrainCutsWaitsShort(t *testing.T) {
	w := New()
	block := func(ctx context.Context) (string, error) { <-ctx.Done(); return "", ctx.Err() }
	now := func(context.Context) (string, error) { return "as it stands", nil }
	got := make(chan string, 1)
	started := make(chan struct{})
	go func() {
		v, err := Wait(context.Background(), w, func(ctx context.Context) (string, error) {
			close(started)
			return block(ctx)
		}, now)
		if err != nil {
			t.Errorf("drained wait: %v", err)
		}
		got <- v
	}()
	<-started
	w.Drain()
	select {
	case v := <-got:
		if v != "as it stands" {
			t.Fatalf("drained wait answered %q", v)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the wait under way was not cut short")
	}
	w.Drain()
	v, err := Wait(context.Background(), w, func(context.Context) (string, error) {
		t.Error("a wait after Drain waited")
		return "", nil
	}, now)
	if err != nil || v != "as it stands" {
		t.Fatalf("after Drain: %q, %v", v, err)
	}
}

// A wait whose own context ends answers as the wait did (the caller gave
// up), and one that ends by itself keeps its answer.
func TestWaitKeepsItsOwnAnswer(t *testing.T) {
	w := New()
	now := func(context.Context) (string, error) { return "now", nil }
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Wait(ctx, w, func(ctx context.Context) (string, error) { return "", ctx.Err() }, now)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled caller: %v", err)
	}
	v, err := Wait(context.Background(), w, func(context.Context) (string, error) { return "ended", nil }, now)
	if err != nil || v != "ended" {
		t.Fatalf("a wait that ended: %q, %v", v, err)
	}
	if w.Drained() {
		t.Fatal("drained without Drain")
	}
}
