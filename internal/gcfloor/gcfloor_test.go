package gcfloor

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
)

// heapGoal is the heap size at which the collector starts its next cycle.
func heapGoal() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// While the floor is kept, the collector's next cycle waits for the heap
// to grow past the floor plus GOGC's share of it; once released, the
// goal falls back.
func TestKeepRaisesTheHeapGoal(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	const n = 256 << 20
	runtime.GC()
	before := heapGoal()
	if before >= n {
		t.Fatalf("heap goal %d before the floor, want below %d", before, n)
	}
	release := Keep(n)
	runtime.GC()
	if got := heapGoal(); got < 2*n {
		t.Errorf("heap goal %d with a floor of %d, want at least %d (GOGC=100)", got, n, 2*n)
	}
	release()
	runtime.GC()
	if got := heapGoal(); got >= n {
		t.Errorf("heap goal %d after release, want below %d", got, n)
	}
}

func TestKeepNothing(t *testing.T) {
	Keep(0)()
	Keep(-1)()
}
