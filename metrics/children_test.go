package metrics

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// Goroutines that look up the same labels at once get one child each,
// made once, and every child added stays (a copy-on-write add loses none
// made by another goroutine's add).
func TestChildrenMadeOnceAndKept(t *testing.T) {
	var c children[string, *int]
	var made atomic.Int64
	keys := make([]string, 50)
	for i := range keys {
		keys[i] = fmt.Sprintf("route-%d", i)
	}
	got := make([][]*int, 8)
	var wg sync.WaitGroup
	for g := range got {
		wg.Go(func() {
			for i := range keys {
				k := keys[(i+g*7)%len(keys)] // each goroutine in its own order
				got[g] = append(got[g], c.get(k, func() *int { made.Add(1); n := len(k); return &n }))
			}
		})
	}
	wg.Wait()
	if n := made.Load(); n != int64(len(keys)) {
		t.Fatalf("lookup ran %d times for %d labels", n, len(keys))
	}
	for g := range got {
		for i, v := range got[g] {
			k := keys[(i+g*7)%len(keys)]
			if want := c.get(k, func() *int { t.Fatalf("%s looked up again", k); return nil }); v != want {
				t.Fatalf("goroutine %d got another child of %s than the one kept", g, k)
			}
		}
	}
}
