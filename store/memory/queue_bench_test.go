package memory_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/store/memory"
)

// BenchmarkQueuePosition measures the full view's queue position on the
// memory store against reading the same task (the baseline every poll
// pays), with n tasks pending.
func BenchmarkQueuePosition(b *testing.B) {
	for _, n := range []int{100, 10_000} {
		ctx := context.Background()
		s := pendingStore(b, n)
		last := benchTaskID(n - 1)
		b.Run(fmt.Sprintf("task/pending=%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := s.Task(ctx, "u", last); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("position/pending=%d", n), func(b *testing.B) {
			for b.Loop() {
				askPosition(b, s, last, n-1)
			}
		})
	}
}

// BenchmarkQueuePositions asks the position of one task at a time, a
// different one each time, with n tasks pending ("poll"); and the same
// with a submit and a claim beside each poll, the queue staying n long
// ("poll+submit+claim").
func BenchmarkQueuePositions(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{1_000, 10_000, 100_000} {
		s := pendingStore(b, n)
		b.Run(fmt.Sprintf("poll/pending=%d", n), func(b *testing.B) {
			i := 0
			for b.Loop() {
				want := (i * 7919) % n // a stride over the whole queue
				i++
				askPosition(b, s, benchTaskID(want), want)
			}
		})
		churned, next := pendingStore(b, n), n // next: the next task's number, across runs
		b.Run(fmt.Sprintf("poll+submit+claim/pending=%d", n), func(b *testing.B) {
			s := churned
			for b.Loop() {
				createBenchTask(b, s, next)
				next++
				if _, err := s.ClaimTask(ctx, time.Hour); err != nil {
					b.Fatal(err)
				}
				askPosition(b, s, benchTaskID(next-1), n-1)
			}
		})
	}
}

// BenchmarkQueueStats measures a metrics scrape with n tasks pending.
func BenchmarkQueueStats(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{1_000, 10_000, 100_000} {
		s := pendingStore(b, n)
		b.Run(fmt.Sprintf("pending=%d", n), func(b *testing.B) {
			for b.Loop() {
				st, err := s.QueueStats(ctx)
				if err != nil || st.Pending != int64(n) {
					b.Fatalf("stats %+v, %v", st, err)
				}
			}
		})
	}
}

// pendingStore returns a store (on the system clock) with n pending
// tasks, benchTaskID(0) to benchTaskID(n-1) in queue order, and credit
// for many more.
func pendingStore(b *testing.B, n int) *memory.Store {
	b.Helper()
	s := testenv.Memory(b, memory.Config{})
	if _, err := s.AddEntry(context.Background(), imagegen.LedgerEntry{Owner: "u", Kind: imagegen.LedgerGrant, Amount: 1 << 40, Ref: "grant:bench"}); err != nil {
		b.Fatal(err)
	}
	for i := range n {
		createBenchTask(b, s, i)
	}
	return s
}

func createBenchTask(b *testing.B, s *memory.Store, i int) {
	t := &imagegen.Task{ID: benchTaskID(i), Owner: "u", Model: "m", Cost: 1,
		Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p", AspectRatio: imagegen.AspectAuto}}
	if _, err := s.CreateTask(context.Background(), t, imagegen.CreateParams{}); err != nil {
		b.Fatal(err)
	}
}

// askPosition asks s for the queue position of id, which must be want.
func askPosition(b *testing.B, s *memory.Store, id string, want int) {
	p, err := s.QueuePositions(context.Background(), []string{id})
	if err != nil || p[0] != want {
		b.Fatalf("position of %s: %v, %v; want %d", id, p, err, want)
	}
}

func benchTaskID(i int) string { return fmt.Sprintf("task-%d", i) }
