package memory_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/store/memory"
)

// BenchmarkQueuePosition measures the full view's queue position on the
// memory store (a count over the pending queue) against reading the same
// task (the baseline every poll pays), with n tasks pending.
func BenchmarkQueuePosition(b *testing.B) {
	for _, n := range []int{100, 10_000} {
		ctx := context.Background()
		s := memory.New(memory.Config{})
		if _, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "u", Kind: imagegen.LedgerGrant, Amount: int64(n), Ref: "grant:bench"}); err != nil {
			b.Fatal(err)
		}
		var last string
		for i := range n {
			last = fmt.Sprintf("task-%d", i)
			t := &imagegen.Task{ID: last, Owner: "u", Model: "m", Cost: 1,
				Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p", AspectRatio: imagegen.AspectAuto}}
			if _, err := s.CreateTask(ctx, t); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(fmt.Sprintf("task/pending=%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := s.Task(ctx, "u", last); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("position/pending=%d", n), func(b *testing.B) {
			for b.Loop() {
				p, err := s.QueuePositions(ctx, []string{last})
				if err != nil || p[0] != n-1 {
					b.Fatalf("position %v, %v", p, err)
				}
			}
		})
	}
}
