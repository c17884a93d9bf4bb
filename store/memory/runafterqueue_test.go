package memory

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestRunAfterQueueMatchesLinearScan drives the queue as the store does
// (records queued under a key, leaving it by a change of their key, in
// any order, some queued again under a new one) with random steps, and
// checks Len and first against a scan of the records queued, and that
// stale entries do not pile up.
func TestRunAfterQueueMatchesLinearScan(t *testing.T) {
	for seed := range uint64(4) {
		rng := rand.New(rand.NewPCG(seed, 7))
		t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		q := runAfterQueue{recs: &slab{}}
		var queued []*record // the oracle
		seq := uint64(0)
		push := func(r *record) {
			seq++
			r.queued = queueKey{order: t0.Add(time.Duration(rng.IntN(50)) * time.Second).UnixNano(), seq: seq}
			q.push(r.queued, r.slot)
			queued = append(queued, r)
		}
		leave := func(i int) *record {
			r := queued[i]
			r.queued = queueKey{}
			q.removed()
			queued = slices.Delete(queued, i, i+1)
			return r
		}
		for step := range 5000 {
			switch op := rng.IntN(10); {
			case op < 5 || len(queued) == 0:
				i := q.recs.alloc()
				q.recs.at(i).slot = i
				push(q.recs.at(i).record)
			case op < 8: // any record leaves (a claim in fair order, a cancel)
				leave(rng.IntN(len(queued)))
			case op < 9: // one leaves and is queued again (a retry)
				push(leave(rng.IntN(len(queued))))
			default: // the oldest leaves
				oldest := 0
				for i, r := range queued {
					if r.queued.before(queued[oldest].queued) {
						oldest = i
					}
				}
				leave(oldest)
			}
			if q.Len() != len(queued) {
				t.Fatalf("seed %d step %d: Len %d, want %d", seed, step, q.Len(), len(queued))
			}
			r, ok := q.first()
			if ok != (len(queued) > 0) {
				t.Fatalf("seed %d step %d: first ok %v with %d queued", seed, step, ok, len(queued))
			}
			for _, o := range queued {
				if ok && o.queued.before(r.queued) {
					t.Fatalf("seed %d step %d: first %v, but %v is queued", seed, step, r.queued, o.queued)
				}
			}
			if stale := len(q.heap) - q.live; stale > 64 && stale > q.live {
				t.Fatalf("seed %d step %d: %d stale entries for %d live", seed, step, stale, q.live)
			}
		}
	}
}
