package groupcommit

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// heldBatcher is a batcher of up to maxInFlight batches in flight that
// holds batches of fewer than minBehind calls behind one in flight, for
// up to holdMax. Its Run reports each batch's calls on ran; the batch
// holding call 1 then waits for block to close. Call 1's batch is in
// flight when it returns.
func heldBatcher(t *testing.T, maxInFlight, minBehind int, holdMax time.Duration) (b *Batcher[int, int], ran chan []int, block chan struct{}) {
	t.Helper()
	ran, block = make(chan []int, 8), make(chan struct{})
	b = &Batcher[int, int]{MaxBatch: 8, MaxInFlight: maxInFlight, MinBehind: minBehind, HoldMax: holdMax,
		Run: func(_ context.Context, batch []*Call[int, int]) {
			reqs := make([]int, 0, len(batch))
			for _, c := range batch {
				reqs = append(reqs, c.Req)
			}
			ran <- reqs
			if slices.Contains(reqs, 1) {
				<-block
			}
		}}
	go func() { _, _ = b.Do(context.Background(), 1) }()
	if got := <-ran; !slices.Equal(got, []int{1}) {
		t.Fatalf("first batch %v, want [1]", got)
	}
	return b, ran, block
}

// holdMax is the HoldMax of the tests that let it pass: a few
// milliseconds of the bubble's fake time.
const holdMax = 5 * time.Millisecond

// doAll makes each call in its own goroutine; wait returns once all
// have been answered.
func doAll(b *Batcher[int, int], reqs ...int) (wait func()) {
	var wg sync.WaitGroup
	for _, r := range reqs {
		wg.Go(func() { _, _ = b.Do(context.Background(), r) })
	}
	return wg.Wait
}

// noBatch fails the test if a batch has run since ran was last read.
func noBatch(t *testing.T, ran chan []int, why string) {
	t.Helper()
	select {
	case got := <-ran:
		t.Fatalf("batch %v ran: %s", got, why)
	default:
	}
}

// nextBatch fails the test unless the next batch to run holds want and
// runs after (in the bubble's time) since start.
func nextBatch(t *testing.T, ran chan []int, want []int, start time.Time, after time.Duration) {
	t.Helper()
	got := <-ran
	if waited := time.Since(start); !slices.Equal(got, want) || waited != after {
		t.Fatalf("batch %v after %v, want %v after %v", got, waited, want, after)
	}
}

// Calls fewer than MinBehind wait behind the batch in flight, though
// MaxInFlight would let them go beside it, and go together, as one
// batch, once it ends.
func TestMinBehindHoldsSmallBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ran, block := heldBatcher(t, 4, 3, time.Hour)
		wait := doAll(b, 2)
		synctest.Wait()
		wait2 := doAll(b, 3)
		synctest.Wait()
		noBatch(t, ran, "calls 2 and 3, fewer than MinBehind, went beside the batch in flight")
		close(block)
		wait()
		wait2()
		if got := <-ran; !slices.Equal(got, []int{2, 3}) {
			t.Fatalf("after the batch in flight: %v, want [2 3] in one batch", got)
		}
		waitIdle(t, b)
	})
}

// Once MinBehind calls wait, they go beside the batch in flight, at
// once: the call that makes MinBehind wakes the held flusher. With
// MaxInFlight 2 every flusher is then busy (one in Run, one holding),
// so no new one may start for it.
func TestMinBehindLetsFullEnoughBatchGo(t *testing.T) {
	for _, maxInFlight := range []int{4, 2} {
		synctest.Test(t, func(t *testing.T) {
			b, ran, block := heldBatcher(t, maxInFlight, 3, time.Hour)
			start := time.Now()
			var waits []func()
			for _, r := range []int{2, 3, 4} {
				if r == 4 {
					noBatch(t, ran, "calls 2 and 3, fewer than MinBehind, went beside the batch in flight")
				}
				waits = append(waits, doAll(b, r))
				synctest.Wait()
			}
			nextBatch(t, ran, []int{2, 3, 4}, start, 0) // beside the batch in flight, at once
			close(block)
			for _, w := range waits {
				w()
			}
			waitIdle(t, b)
		})
	}
}

// A batch held behind one that takes longer than HoldMax goes anyway
// once HoldMax has passed since its first call was queued, beside the
// batch still in flight: a call that joins it later (and wakes its
// flusher) does not put that off.
func TestHoldMaxBoundsTheHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ran, block := heldBatcher(t, 4, 4, holdMax)
		start := time.Now()
		wait := doAll(b, 2)
		synctest.Wait()
		time.Sleep(3 * time.Millisecond)
		wait2 := doAll(b, 3)
		synctest.Wait()
		noBatch(t, ran, "calls 2 and 3 went before HoldMax")
		nextBatch(t, ran, []int{2, 3}, start, holdMax) // HoldMax from the first call's queueing
		wait()
		wait2()
		close(block)
		waitIdle(t, b)
	})
}

// With nothing in flight a call goes at once, however few: MinBehind
// never makes a lone call wait.
func TestMinBehindLoneCallGoesAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ran := 0
		b := &Batcher[int, int]{MaxBatch: 8, MaxInFlight: 4, MinBehind: 8, HoldMax: time.Hour,
			Run: func(context.Context, []*Call[int, int]) { ran++ }}
		start := time.Now()
		if _, err := b.Do(context.Background(), 1); err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited != 0 || ran != 1 {
			t.Fatalf("a lone call ran %d times after %v, want once at once", ran, waited)
		}
		waitIdle(t, b)
	})
}

// A flusher that held a batch which the flusher of the batch in flight
// then took lingers, as one that found the queue empty does: it does
// not end when HoldMax passes (a flusher started anew for the next
// batch grows its stack again).
func TestHeldFlusherLingers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ran, block := heldBatcher(t, 4, 3, holdMax)
		wait := doAll(b, 2)
		synctest.Wait() // call 2 is held by a second flusher
		close(block)    // the first flusher takes it
		wait()
		if got := <-ran; !slices.Equal(got, []int{2}) {
			t.Fatalf("batch %v, want [2]", got)
		}
		time.Sleep(2 * holdMax)
		synctest.Wait()
		b.mu.Lock()
		flushers := b.flushers
		b.mu.Unlock()
		if flushers != 2 {
			t.Fatalf("%d flushers once HoldMax passed with the queue empty, want 2 (both lingering)", flushers)
		}
		waitIdle(t, b)
	})
}

// HoldMax counts from when each call was queued: when the first held
// call gives up, the call behind it is not held HoldMax anew.
func TestHoldMaxCountsFromEachCallsQueueing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ran, block := heldBatcher(t, 4, 3, holdMax)
		start := time.Now()
		ctx, cancel := context.WithCancel(context.Background())
		gaveUp := make(chan error)
		go func() { _, err := b.Do(ctx, 2); gaveUp <- err }()
		synctest.Wait()
		wait := doAll(b, 3)
		synctest.Wait()
		time.Sleep(holdMax / 2)
		cancel()
		if err := <-gaveUp; !errors.Is(err, context.Canceled) {
			t.Fatalf("call 2: %v, want context.Canceled", err)
		}
		nextBatch(t, ran, []int{3}, start, holdMax) // HoldMax from when call 3 was queued
		wait()
		close(block)
		waitIdle(t, b)
	})
}
