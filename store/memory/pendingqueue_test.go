package memory

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/matryer/is"
)

// Len reports how many tasks are queued (for the tests: the store
// counts its queues' tasks otherwise).
func (q *pendingQueue) Len() int { return q.count(q.root) }

// first returns the head of the queue: the entry claimed next.
func (q *pendingQueue) first() (queueKey, task, bool) {
	i := q.root
	if i == 0 {
		return queueKey{}, task{}, false
	}
	for q.node(i).left != 0 {
		i = q.node(i).left
	}
	return q.node(i).key, q.recs.at(i), true
}

// newPendingQueue returns an empty queue on a slab of its own.
func newPendingQueue() *pendingQueue { return &pendingQueue{recs: &slab{}} }

// pushNew queues a new record at k.
func (q *pendingQueue) pushNew(k queueKey) { q.push(q.recs.alloc(), k) }

// TestPendingQueueOrder: earlier RunAfter first, then lower seq.
func TestPendingQueueOrder(t *testing.T) {
	is := is.New(t)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	q := newPendingQueue()
	_, _, ok := q.first()
	is.True(!ok) // empty
	late := queueKey{order: (t0.Add(time.Minute)).UnixNano(), seq: 1}
	tie1 := queueKey{order: (t0).UnixNano(), seq: 2}
	tie2 := queueKey{order: (t0).UnixNano(), seq: 3}
	for _, k := range []queueKey{late, tie2, tie1} {
		q.pushNew(k)
	}
	is.Equal(q.Len(), 3)
	head, r, ok := q.first()
	is.True(ok)
	is.Equal(head, tie1)
	is.Equal(r.fair.key, tie1) // the record pushed with the key
	is.Equal(q.ahead(tie1), 0)
	is.Equal(q.ahead(tie2), 1)
	is.Equal(q.ahead(late), 2)
	is.Equal(q.ahead(queueKey{order: (t0.Add(time.Hour)).UnixNano(), seq: 0}), 3) // not queued: counts all before it

	is.True(!q.remove(queueKey{order: (t0).UnixNano(), seq: 1})) // seq 1 is queued, but at another time
	is.True(q.remove(tie1))
	is.True(!q.remove(tie1)) // once
	is.Equal(q.Len(), 2)
	is.Equal(q.ahead(late), 1)
	head, _, _ = q.first()
	is.Equal(head, tie2)
}

// TestPendingQueueMatchesLinearCount drives the queue with random pushes
// and removals (many RunAfter ties, RunAfter out of seq order) and
// checks every answer against a linear scan of the entries, which is how
// the store counted before.
func TestPendingQueueMatchesLinearCount(t *testing.T) {
	for seed := range uint64(4) {
		rng := rand.New(rand.NewPCG(seed, 42))
		t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		randomKey := func(seq uint64) queueKey {
			return queueKey{order: (t0.Add(time.Duration(rng.IntN(20)) * time.Second)).UnixNano(), seq: seq}
		}
		q := newPendingQueue()
		var live []queueKey // the oracle, unordered
		seq := uint64(0)
		for step := range 3000 {
			switch op := rng.IntN(10); {
			case op < 5 || len(live) == 0: // push
				seq++
				k := randomKey(seq)
				q.pushNew(k)
				live = append(live, k)
			case op < 8: // remove any
				i := rng.IntN(len(live))
				if !q.remove(live[i]) {
					t.Fatalf("seed %d step %d: %v not removed", seed, step, live[i])
				}
				live = slices.Delete(live, i, i+1)
			case op < 9: // remove the head, as a claim does
				head, _, _ := q.first()
				if !q.remove(head) {
					t.Fatalf("seed %d step %d: head %v not removed", seed, step, head)
				}
				live = slices.DeleteFunc(live, func(k queueKey) bool { return k == head })
			default: // remove what is not there
				if q.remove(randomKey(seq + 1)) {
					t.Fatalf("seed %d step %d: removed an entry never pushed", seed, step)
				}
			}
			asked := []queueKey{randomKey(seq + 1)} // not queued
			for range min(len(live), 20) {
				asked = append(asked, live[rng.IntN(len(live))])
			}
			checkPendingQueue(t, q, live, asked)
			if t.Failed() {
				t.Fatalf("seed %d step %d", seed, step)
			}
		}
	}
}

// checkPendingQueue compares q with the linear answers over live (for
// ahead, those of the keys asked), and checks the treap's own
// invariants.
func checkPendingQueue(t *testing.T, q *pendingQueue, live, asked []queueKey) {
	t.Helper()
	linearAhead := func(k queueKey) int {
		n := 0
		for _, l := range live {
			if l.before(k) {
				n++
			}
		}
		return n
	}
	if q.Len() != len(live) {
		t.Errorf("Len %d, want %d", q.Len(), len(live))
	}
	head, r, ok := q.first()
	if ok != (len(live) > 0) {
		t.Errorf("first ok %v with %d entries", ok, len(live))
	}
	if ok && (linearAhead(head) != 0 || r.fair.key != head) {
		t.Errorf("first %v (record at %v) is not the head", head, r.fair.key)
	}
	for _, k := range asked {
		if got, want := q.ahead(k), linearAhead(k); got != want {
			t.Errorf("ahead(%v) = %d, want %d", k, got, want)
		}
	}
	checkTreap(t, q, q.root, nil, nil)
}

// checkTreap checks that the subtree n is ordered (between lo and hi,
// when given), that no child's priority exceeds its parent's and that
// every size is right, and returns the subtree's size.
func checkTreap(t *testing.T, q *pendingQueue, i slot, lo, hi *queueKey) int {
	t.Helper()
	if i == 0 {
		return 0
	}
	n := q.node(i)
	if (lo != nil && !lo.before(n.key)) || (hi != nil && !n.key.before(*hi)) {
		t.Errorf("%v out of order", n.key)
	}
	for _, c := range []slot{n.left, n.right} {
		if c != 0 && q.node(c).prio > n.prio {
			t.Errorf("%v: child's priority above its parent's", q.node(c).key)
		}
	}
	size := 1 + checkTreap(t, q, n.left, lo, &n.key) + checkTreap(t, q, n.right, &n.key, hi)
	if int(n.size) != size {
		t.Errorf("%v: size %d, want %d", n.key, n.size, size)
	}
	return size
}

// TestPendingQueueStaysShallow: keys pushed in order (the common case:
// one RunAfter after another) still give a tree of logarithmic depth.
func TestPendingQueueStaysShallow(t *testing.T) {
	q := newPendingQueue()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const n = 1 << 16
	for seq := range uint64(n) {
		k := queueKey{order: (t0.Add(time.Duration(seq))).UnixNano(), seq: seq + 1}
		q.pushNew(k)
	}
	var depth func(slot) int
	depth = func(i slot) int {
		if i == 0 {
			return 0
		}
		return 1 + max(depth(q.node(i).left), depth(q.node(i).right))
	}
	if d := depth(q.root); d > 4*16 { // a random tree's height: about 4.31·ln n ≈ 48
		t.Fatalf("depth %d for %d keys", d, n)
	}
}
