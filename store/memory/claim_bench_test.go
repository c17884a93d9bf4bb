package memory_test

import (
	"testing"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/store/memory"
	"github.com/imagegen/imagegen/store/storetest"
)

// BenchmarkClaims: one claim with 10,000 pending tasks of one owner or
// of 10,000 owners.
func BenchmarkClaims(b *testing.B) {
	storetest.BenchmarkClaims(b, newBenchStore)
}

// BenchmarkClaimAllOwnersAtCap: a claim that finds every owner at its
// cap (storetest.BenchmarkClaimAllOwnersAtCap).
func BenchmarkClaimAllOwnersAtCap(b *testing.B) {
	storetest.BenchmarkClaimAllOwnersAtCap(b, newBenchStore)
}

// newBenchStore is an empty memory store.
func newBenchStore(b *testing.B) imagegen.Store {
	s, err := memory.New(memory.Config{})
	if err != nil {
		b.Fatal(err)
	}
	return s
}
