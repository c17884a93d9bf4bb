package bench

import (
	"testing"
	"time"

	"github.com/imagegen/imagegen/store/memory"
)

// BenchmarkMemoryPipeline is BenchmarkRedisPipeline's imagegen half on
// the memory store: the service's own cost per task (claims, fair
// share, the worker, the store's bookkeeping) with no database between.
func BenchmarkMemoryPipeline(b *testing.B) {
	store, err := memory.New(memory.Config{Retention: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	runServicePipeline(b, store, nil)
}
