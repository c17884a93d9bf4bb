package groupcommit

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// Concurrent calls share batches, each gets its own result, and no batch
// is larger than MaxBatch: the calls that queue while a batch runs go in
// batches of MaxBatch. The test runs in a synctest bubble, where
// synctest.Wait returns once every call has queued (every goroutine is
// blocked for good).
func TestCallsShareBatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var sizes []int
		release := make(chan struct{})
		b := &Batcher[int, int]{MaxBatch: 8, MaxInFlight: 1, Run: func(_ context.Context, batch []*Call[int, int]) {
			<-release
			mu.Lock()
			sizes = append(sizes, len(batch))
			mu.Unlock()
			for _, c := range batch {
				c.Res = c.Req * 2
			}
		}}
		const calls = 50
		var wg sync.WaitGroup
		for i := range calls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if got, err := b.Do(context.Background(), i); err != nil || got != 2*i {
					t.Errorf("call %d: got %d, %v", i, got, err)
				}
			}()
		}
		synctest.Wait() // the first batch runs; the other calls have queued behind it
		close(release)
		wg.Wait()
		total := 0
		for _, n := range sizes {
			if n > 8 {
				t.Fatalf("batch of %d", n)
			}
			total += n
		}
		queued := calls - sizes[0]
		if total != calls || len(sizes) != 1+(queued+7)/8 {
			t.Fatalf("batches %v: want the %d calls queued behind the first batch in batches of 8", sizes, queued)
		}
		waitIdle(t, b) // the flushers end after lingering
	})
}

// batchInFlight is a batcher of one batch in flight whose Run sends each
// call's Req to ran and then waits for block to close, with call 1's
// batch running: a call made now queues behind it.
func batchInFlight(t *testing.T) (b *Batcher[int, int], ran chan int, block chan struct{}) {
	t.Helper()
	ran, block = make(chan int, 2), make(chan struct{})
	b = &Batcher[int, int]{MaxBatch: 8, MaxInFlight: 1, Run: func(_ context.Context, batch []*Call[int, int]) {
		for _, c := range batch {
			ran <- c.Req
		}
		<-block
	}}
	go func() { _, _ = b.Do(context.Background(), 1) }()
	if got := <-ran; got != 1 {
		t.Fatalf("ran %d", got)
	}
	return b, ran, block
}

// A call whose context ended before its batch was sent is not run.
func TestCancelledCallIsDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ran, block := batchInFlight(t)
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error)
		go func() { _, err := b.Do(ctx, 2); errc <- err }()
		synctest.Wait() // call 2 has queued behind the running batch
		cancel()
		close(block)
		if err := <-errc; err != context.Canceled {
			t.Fatalf("got %v, want context.Canceled", err)
		}
		synctest.Wait() // the batcher has nothing left to do
		select {
		case got := <-ran:
			t.Fatalf("the cancelled call ran (%d)", got)
		default:
		}
		waitIdle(t, b) // the flushers end after lingering
	})
}

// A call whose context ends while it waits behind a batch in flight
// returns at once with the context's error, not when that batch ends
// (which may take up to Timeout: a batch waiting on a lock, say), and is
// not run.
func TestCancelledCallReturnsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ran, block := batchInFlight(t)
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() { _, err := b.Do(ctx, 2); errc <- err }()
		synctest.Wait() // call 2 has queued behind the running batch
		cancel()
		synctest.Wait()
		returned := false
		select {
		case err := <-errc:
			returned = true
			if err != context.Canceled {
				t.Errorf("got %v, want context.Canceled", err)
			}
		default:
			t.Errorf("the cancelled call still waits for the batch in flight")
		}
		close(block)
		if !returned {
			<-errc // it returns once the batch in flight ends
		}
		synctest.Wait()
		select {
		case got := <-ran:
			t.Fatalf("the cancelled call ran (%d)", got)
		default:
		}
		waitIdle(t, b)
	})
}

// waitIdle sleeps (in a synctest bubble's time) until b's flushers have
// lingered and ended, and fails the test if any is left.
func waitIdle[Req, Res any](t *testing.T, b *Batcher[Req, Res]) {
	t.Helper()
	time.Sleep(linger + time.Millisecond)
	synctest.Wait()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.flushers != 0 || b.idle != 0 {
		t.Fatalf("%d flushers (%d idle) left after lingering", b.flushers, b.idle)
	}
}

// A flusher that finds the queue empty lingers: a call made meanwhile
// goes in its next batch, with no new flusher; it ends once linger
// passes with nothing to do.
func TestFlusherLingers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		batches := 0
		b := &Batcher[int, int]{MaxBatch: 8, MaxInFlight: 2, Run: func(_ context.Context, batch []*Call[int, int]) {
			batches++
			for _, c := range batch {
				c.Res = c.Req + 1
			}
		}}
		for i := range 3 {
			if got, err := b.Do(context.Background(), i); err != nil || got != i+1 {
				t.Fatalf("call %d: %d, %v", i, got, err)
			}
			synctest.Wait() // the flusher is lingering
			b.mu.Lock()
			flushers, idle := b.flushers, b.idle
			b.mu.Unlock()
			if flushers != 1 || idle != 1 {
				t.Fatalf("after call %d: %d flushers, %d idle; want the one flusher lingering", i, flushers, idle)
			}
			time.Sleep(linger / 2) // within linger: the next call wakes it
		}
		if batches != 3 {
			t.Fatalf("%d batches, want 3", batches)
		}
		waitIdle(t, b)
	})
}

// With Size, a batch stops before its sizes add up to more than MaxSize,
// but always takes one call, however large.
func TestBatchesAreBoundedBySize(t *testing.T) {
	b := &Batcher[int, int]{MaxBatch: 3, Size: func(n int) int { return n }, MaxSize: 10}
	var got []int
	for _, req := range []int{4, 4, 4, 20, 1, 1, 1, 1} {
		b.queue = append(b.queue, &Call[int, int]{Req: req})
	}
	for len(b.queue) > 0 {
		n := b.batchLen()
		got = append(got, n)
		b.queue = b.queue[n:]
	}
	want := []int{2, 1, 1, 3, 1} // 4+4 | 4 (4+20 too big) | 20 alone | 1+1+1 (MaxBatch) | 1
	if len(got) != len(want) {
		t.Fatalf("batch lengths %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("batch lengths %v, want %v", got, want)
		}
	}
}

// Callers that call again as soon as they are answered (a closed loop)
// make batches of all of them with Gather; without it, the one call that
// queued while a batch ran went alone, and the others next, in turn.
// The batch takes a little time (a store's round trip), so that the
// callers answered last time are queued behind it.
func TestGatherKeepsClosedLoopCallersTogether(t *testing.T) {
	for _, gather := range []bool{false, true} {
		var mu sync.Mutex
		sizes := map[int]int{}
		b := &Batcher[int, int]{MaxBatch: 64, MaxInFlight: 1, Gather: gather, Run: func(_ context.Context, batch []*Call[int, int]) {
			time.Sleep(200 * time.Microsecond)
			mu.Lock()
			sizes[len(batch)]++
			mu.Unlock()
		}}
		const callers, rounds = 16, 50
		var wg sync.WaitGroup
		for range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range rounds {
					if _, err := b.Do(context.Background(), 0); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		batches := 0
		for _, n := range sizes {
			batches += n
		}
		t.Logf("gather %v: %d batches for %d calls (sizes: %v)", gather, batches, callers*rounds, sizes)
		// Without Gather: two batches a round (1 and 15); with it, one.
		if gather && batches > rounds*3/2 {
			t.Errorf("with Gather, %d batches for %d rounds of %d closed-loop callers, want about %d", batches, rounds, callers, rounds)
		}
	}
}
