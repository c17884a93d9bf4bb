package memory

import "container/heap"

// Delayed retries. A retry waiting out its delay (RunAfter still to
// come) keeps its place by its tag in its model's queue, so that it
// starts before the tasks queued after it once its delay ends; but
// while it waits, a claim can only pass over it, and once more of them
// than a claim passes over (imagegen.ClaimScan) lay at the head of a
// model's queue (a provider failing for a minute leaves hundreds) every
// other task of the model waited behind them, the workers idle
// (docs/scheduling.md, "The look-ahead within a model"). So a claim
// that meets such a task moves it, uncounted and under the same key,
// out of the model's queue (or an owner's parked list) into the model's
// delayed set (modelState.delayed, by key, for positions, stats and
// cancels) and its heap of RunAfters (modelState.due); each claim first
// moves back into the model's queue, under their keys, the tasks whose
// RunAfter has passed, in RunAfter order. A claim moves at most
// delayMost tasks each way a model: the tasks beyond wait a claim or a
// few more (a due task not yet moved back is not claimed before the
// tasks behind it), and no claim's work grows with the number of
// retries waiting.

// delayMost is how many tasks of a model a claim moves into its delayed
// set at most, and how many it moves back.
const delayMost = 1024

// dueEntry is a task of a model's delayed set in its heap of RunAfters.
// An entry is stale once its record is no longer in the set under its
// key (claimed after moving back, cancelled; a freed slot's next record
// is never under the key: seqs are unique); stale entries leave the heap
// when they reach its top, or with the set's last task.
type dueEntry struct {
	at   stamp    // the task's RunAfter
	key  queueKey // its key in the fair order
	slot slot
}

func (e dueEntry) before(o dueEntry) bool {
	if e.at != o.at {
		return e.at.before(o.at)
	}
	return e.key.before(o.key)
}

// delay moves r, not ready, out of m's queue or an owner's parked list
// of m into m's delayed set, under the same key; s.mu is held.
func (s *Store) delay(m *modelState, r task) {
	k := r.fair.key
	m.unqueue(r)
	m.delayed.push(r.slot, k)
	r.fair.delayed = true
	heap.Push(&m.due, dueEntry{at: r.runAfter, key: k, slot: r.slot})
}

// promote moves back into m's queue, under their keys, the tasks of m's
// delayed set whose RunAfter is not after at, the earliest first, at
// most delayMost (stale entries counted); s.mu is held.
func (s *Store) promote(m *modelState, at stamp) {
	if m.delayed.root == 0 {
		clear(m.due)
		m.due = m.due[:0]
		return
	}
	for n := 0; n < delayMost && len(m.due) > 0; n++ {
		e := m.due[0]
		r := s.recs.at(e.slot)
		if r.fair.delayed && r.fair.key == e.key && at.before(e.at) {
			return
		}
		heap.Pop(&m.due)
		if r.fair.delayed && r.fair.key == e.key {
			m.delayed.remove(e.key)
			m.queue.push(e.slot, e.key) // a node pushed anew: neither parked nor delayed
		}
	}
}
