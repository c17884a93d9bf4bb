package memory

import (
	"slices"
	"sort"
	"strings"
)

// Parked owners. A claim under an owner cap passes over the tasks of an
// owner at its cap, and an owner whose slow tasks hold its slots falls
// behind the tags now served: its backlog gathers at the head of its
// model's queue, where every claim would read it again to find nothing
// it may start (docs/scheduling.md, "Concurrency caps"). So a claim
// that meets a task of an owner at its cap in a model's queue parks it:
// moves it, under the same key, out of the model's queue into the
// model's parked queue (modelState.parked, all its parked tasks in claim
// order) and its owner's parked list of the model (parkedOwner.tasks),
// where the model's later walks do not read it. A task is parked at most
// once while it waits: one move, O(log n), and an insert in its owner's
// list, an append when it is the owner's latest.
//
// A model's parked owners form a ring. Each claim that merges a model
// looks at the next parkedLook of them, the least recently looked at
// first, one running count each: a claim's work stays bounded however
// many owners are parked (10,000 owners at their caps would cost each
// claim 10,000 counts, 3 ms, were all looked at). The parked list of
// an owner looked at with a free slot, or of each owner looked at when
// the claim has no owner cap, is merged like one more queue of the
// model: its tasks compete by their key, so the owner's oldest task,
// fallen behind, goes first. A parked owner's tasks met in the model's
// queue (queued after it was parked) while its parked list is not in
// the merge are parked in turn, so an owner's tasks still go oldest
// first; an owner with a free slot beyond the window waits for the ring
// to come round to it, at most (parked owners ÷ parkedLook) claims of
// the model. An owner leaves the ring when its parked list empties
// (its tasks claimed, cancelled: dequeue finds a parked task by its
// node's parked flag).
//
// Submits do not change. QueuePositions and SchedulerStats count the
// parked tasks in claim order, by their keys: the model's parked queue
// is one more queue to count in (O(log n)) or to merge.

// parkedLook is how many of a model's parked owners a claim looks at,
// as the Redis store's claim does.
const parkedLook = 64

// parkedOwner is one owner's parked tasks of a model, and its place in
// the model's ring of parked owners.
type parkedOwner struct {
	owner      string
	tasks      []slot // in claim order (by their keys)
	prev, next *parkedOwner
	walk       uint64 // the last claim's walk (Store.walks) that merged tasks
}

// search returns the index in p.tasks of the first task after k, or of
// k itself when after is false.
func (p *parkedOwner) search(recs *slab, k queueKey, after bool) int {
	return sort.Search(len(p.tasks), func(i int) bool {
		key := recs.at(p.tasks[i]).fair.key
		return k.before(key) || (!after && key == k)
	})
}

// after returns the slot of p's first task after k, or 0 when there is
// none (k itself need not be p's).
func (p *parkedOwner) after(recs *slab, k queueKey) slot {
	if i := p.search(recs, k, true); i < len(p.tasks) {
		return p.tasks[i]
	}
	return 0
}

// head returns the slot of p's first task, or 0 when it has none.
func (p *parkedOwner) head() slot {
	if len(p.tasks) == 0 {
		return 0
	}
	return p.tasks[0]
}

// park moves r, a task in m's queue, to m's parked queue and its owner's
// parked list of m, under the same key; s.mu is held. An owner parked
// anew joins the ring last: it was just looked at.
func (s *Store) park(m *modelState, r task) {
	k := r.fair.key
	m.queue.remove(k)
	m.parked.push(r.slot, k)
	r.fair.parked = true
	owner := r.owner()
	p := m.parkedOwners[owner]
	if p == nil {
		if m.parkedOwners == nil {
			m.parkedOwners = map[string]*parkedOwner{}
		}
		p = &parkedOwner{owner: strings.Clone(owner)} // not the task's text, which may go first
		m.parkedOwners[p.owner] = p
		if m.look == nil {
			p.prev, p.next, m.look = p, p, p
		} else {
			p.prev, p.next = m.look.prev, m.look
			p.prev.next, p.next.prev = p, p
		}
	}
	p.tasks = slices.Insert(p.tasks, p.search(&s.recs, k, true), r.slot)
}

// unqueue takes r out of m's queues, the model's or the parked ones; an
// owner with no parked task left leaves the ring.
func (m *modelState) unqueue(r task) {
	k := r.fair.key
	if r.fair.delayed {
		m.delayed.remove(k) // its entry in m.due goes stale
		return
	}
	if !r.fair.parked {
		m.queue.remove(k)
		return
	}
	m.parked.remove(k)
	p := m.parkedOwners[r.owner()]
	p.tasks = slices.Delete(p.tasks, p.search(m.parked.recs, k, false), p.search(m.parked.recs, k, true))
	if len(p.tasks) != 0 {
		return
	}
	delete(m.parkedOwners, p.owner)
	if m.look == p {
		m.look = p.next
	}
	if p.next == p {
		m.look = nil
	}
	p.prev.next, p.next.prev = p.next, p.prev
}

// unmerged says whether owner is parked in m and its parked list is not
// in the merge of walk: its tasks met in m's queue are to be parked.
func (m *modelState) unmerged(owner string, walk uint64) bool {
	if m.look == nil {
		return false
	}
	p := m.parkedOwners[owner]
	return p != nil && p.walk != walk
}

// ahead counts m's pending tasks claimed before key, parked or not.
func (m *modelState) ahead(key queueKey) int {
	return m.queue.ahead(key) + m.parked.ahead(key) + m.delayed.ahead(key)
}
