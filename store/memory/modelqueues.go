package memory

import "github.com/imagegen/imagegen"

// Each model's pending tasks form a queue of their own (modelState.queue),
// ordered by the fair-share key the task was queued under; the claim
// order is the merge of these queues, lowest key first, the same order
// one queue of every task would give. Keeping them apart lets a claim
// pass over a model that may not start now (paused, at its cap, waiting
// for its rate) without reading its tasks, however many there are. The
// tasks of an owner found at its cap are parked apart from their model's
// queue (parked.go), under the same keys; a walk merges them back for an
// owner that may start one.

// queueCursor walks one of a model's queues in claim order: the model's
// own or parked queue, or a parked owner's list (parked.go).
type queueCursor struct {
	model string
	m     *modelState
	queue *pendingQueue // the queue walked, or nil
	owner *parkedOwner  // the parked owner whose list is walked, or nil
	at    slot          // the entry the cursor is on; 0 once it has passed the end
	// home is the index, in the walk, of the cursor on the model's own
	// queue; the model's other cursors follow it.
	home    int
	delayed int // on the home cursor: tasks of the model the walk delayed (delayed.go)
}

// cursors starts a walk of the pending queues: for each model but those
// skip names, a cursor on the head of its queue, and when merge is nil
// one on the head of its parked queue (every parked task), else one on
// the head of the parked list of each owner among the next parkedLook
// of the model's ring that merge accepts, marked with the walk's
// number, s.walks; s.mu is held. The slice is the store's, reused by
// the next walk.
func (s *Store) cursors(skip, merge func(name string) bool) []queueCursor {
	out := s.walk[:0]
	defer func() { s.walk = out }()
	s.walks++
	for name, m := range s.models {
		if (m.queue.root == 0 && m.look == nil && (merge != nil || m.delayed.root == 0)) || (skip != nil && skip(name)) {
			continue
		}
		home := len(out)
		out = append(out, queueCursor{model: name, m: m, queue: &m.queue, at: m.queue.head(), home: home})
		if merge == nil {
			out = append(out, queueCursor{model: name, m: m, queue: &m.parked, at: m.parked.head(), home: home},
				queueCursor{model: name, m: m, queue: &m.delayed, at: m.delayed.head(), home: home})
			continue
		}
		p := m.look
		for looked := 0; p != nil && looked < parkedLook; looked++ {
			if merge(p.owner) {
				p.walk = s.walks
				out = append(out, queueCursor{model: name, m: m, owner: p, at: p.head(), home: home})
			}
			if p = p.next; p == m.look {
				break
			}
		}
		m.look = p // the least recently looked at first
	}
	return out
}

// stop ends the walk of every queue of c's model.
func stop(cs []queueCursor, c *queueCursor) {
	for j := c.home; j < len(cs) && cs[j].home == c.home; j++ {
		cs[j].at = 0
	}
}

// lowest returns the index of the cursor on the lowest key, or -1 when
// every cursor has passed its queue's end.
func (s *Store) lowest(cs []queueCursor) int {
	best := -1
	for i, c := range cs {
		if c.at != 0 && (best < 0 || s.recs.at(c.at).fair.key.before(s.recs.at(cs[best].at).fair.key)) {
			best = i
		}
	}
	return best
}

// advance moves c to its queue's next entry.
func (s *Store) advance(c *queueCursor) {
	k := s.recs.at(c.at).fair.key
	if c.owner != nil {
		c.at = c.owner.after(&s.recs, k)
		return
	}
	c.at = c.queue.after(k)
}

// ahead counts the pending tasks claimed before key, in every model's
// queues, parked ones included; s.mu is held.
func (s *Store) ahead(key queueKey) int {
	n := 0
	for _, m := range s.models {
		n += m.ahead(key)
	}
	return n
}

// modelHeld says why no task of model may start now under h's limits
// and picks, or "" when its tasks may (an owner's cap may still hold
// one back).
func (h *holds) modelHeld(model string) imagegen.HoldReason {
	if c := h.l.ModelCap(model); c > 0 && h.running(&h.models, model, h.s.model(model).running) >= c {
		return imagegen.HeldModelCap
	}
	if h.now.Before(h.s.model(model).pausedUntil) {
		return imagegen.HeldModelRate
	}
	if h.l.ModelStartRate(model) > 0 && h.now.Before(h.nextStart(model)) {
		return imagegen.HeldModelRate
	}
	return ""
}
