package groupcommit

import (
	"context"
	"sync"
	"testing"
	"time"
)

// Concurrent calls share batches, each gets its own result, and no batch
// is larger than MaxBatch.
func TestCallsShareBatches(t *testing.T) {
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
	time.Sleep(50 * time.Millisecond) // let them queue behind the first batch
	close(release)
	wg.Wait()
	total := 0
	for _, n := range sizes {
		if n > 8 {
			t.Fatalf("batch of %d", n)
		}
		total += n
	}
	if total != calls || len(sizes) >= calls {
		t.Fatalf("batches %v: want %d calls in fewer batches", sizes, calls)
	}
}

// A call whose context ended before its batch was sent is not run.
func TestCancelledCallIsDropped(t *testing.T) {
	ran := make(chan int, 2)
	block := make(chan struct{})
	b := &Batcher[int, int]{MaxBatch: 8, MaxInFlight: 1, Run: func(_ context.Context, batch []*Call[int, int]) {
		for _, c := range batch {
			ran <- c.Req
		}
		<-block
	}}
	go func() { _, _ = b.Do(context.Background(), 1) }()
	if got := <-ran; got != 1 {
		t.Fatalf("ran %d", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error)
	go func() { _, err := b.Do(ctx, 2); errc <- err }()
	time.Sleep(20 * time.Millisecond)
	cancel()
	close(block)
	if err := <-errc; err != context.Canceled {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	select {
	case got := <-ran:
		t.Fatalf("the cancelled call ran (%d)", got)
	case <-time.After(20 * time.Millisecond):
	}
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
