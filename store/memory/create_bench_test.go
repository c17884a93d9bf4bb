package memory_test

import (
	"context"
	"testing"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/store/memory"
)

// BenchmarkCreateTask: a submit's CreateTask on a queue that grows by
// one task an op (one owner, one model, no workers), as in serve's HTTP
// benchmark. Run it with a large -benchtime (300000x) to see what the
// queue's length costs: a walk through the slab is a cache miss a node.
func BenchmarkCreateTask(b *testing.B) {
	ctx := context.Background()
	s, err := memory.New(memory.Config{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "owner", Kind: imagegen.LedgerGrant, Amount: 1 << 62, Ref: "grant"}); err != nil {
		b.Fatal(err)
	}
	req := imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "a lighthouse at dusk, oil painting"}
	b.ReportAllocs()
	for b.Loop() {
		t := &imagegen.Task{ID: imagegen.NewOwnedID("owner"), Owner: "owner", Model: "m", Cost: 1, Request: req}
		if _, err := s.CreateTask(ctx, t, imagegen.CreateParams{}); err != nil {
			b.Fatal(err)
		}
	}
}
