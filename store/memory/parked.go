package memory

import "strings"

// Parked owners. A claim under an owner cap passes over the tasks of an
// owner at its cap, and an owner whose slow tasks hold its slots falls
// behind the tags now served: its backlog gathers at the head of its
// model's queue, where every claim would read it again to find nothing
// it may start (docs/scheduling.md, "Concurrency caps"). So a claim
// that meets a task of an owner at its cap in a model's queue parks it:
// moves it, under the same key, to that owner's parked queue of that
// model (modelState.parked), where the model's later walks do not read
// it. A task is parked at most once while it waits: one move, O(log n).
//
// Each claim that merges a model looks at all of the model's parked
// owners, one running count each (a map lookup and the owner's running
// tasks, counted once per claim): never more work than reading one task
// of each, which the claim did before. The parked queue of an owner with
// a free slot, or of every owner when the claim has no owner cap, is
// merged like one more queue of the model: its tasks compete by their
// key, so the owner's oldest task, fallen behind, goes first. The parked
// queue of an owner at its cap is not read; that owner's tasks still in
// the model's queue (queued after it was parked) are parked in turn when
// a claim meets them, so an owner's tasks still go oldest first. An owner
// leaves the parked state when its parked queue empties (its tasks
// claimed, cancelled, expired or removed: dequeue finds a parked task by
// its node's parked flag).
//
// Submits do not change. QueuePositions and SchedulerStats count the
// parked tasks in claim order, by their keys, with the model's queue.

// park moves r, a task in m's queue whose owner is at its cap, to its
// owner's parked queue of m, under the same key; s.mu is held.
func (s *Store) park(m *modelState, r task) {
	k := r.fair.key
	m.queue.remove(k)
	owner := r.owner()
	q := m.parked[owner]
	if q == nil {
		if m.parked == nil {
			m.parked = map[string]*pendingQueue{}
		}
		q = &pendingQueue{recs: &s.recs}
		m.parked[strings.Clone(owner)] = q // not the task's text, which may go first
	}
	q.push(r.slot, k)
	r.fair.parked = true
}

// unqueue takes r out of m's queues, the model's or its owner's parked
// one; an owner whose parked queue empties is parked no more.
func (m *modelState) unqueue(r task) {
	if !r.fair.parked {
		m.queue.remove(r.fair.key)
		return
	}
	owner := r.owner()
	q := m.parked[owner]
	q.remove(r.fair.key)
	if q.root == 0 {
		delete(m.parked, owner)
	}
}

// ahead counts m's pending tasks claimed before key: in its queue and
// in its parked queues, O((1 + parked owners) × log n).
func (m *modelState) ahead(key queueKey) int {
	n := m.queue.ahead(key)
	for _, q := range m.parked {
		n += q.ahead(key)
	}
	return n
}
