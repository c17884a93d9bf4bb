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
// own, or a parked owner's (parked.go).
type queueCursor struct {
	model  string
	queue  *pendingQueue
	parked bool // queue is an owner's parked queue of the model
	at     slot // the entry the cursor is on; 0 once it has passed the end
	// home is the index, in the walk, of the cursor on the model's own
	// queue; the model's parked queues' cursors follow it.
	home   int
	passed int // on the home cursor: tasks of the model the walk passed over
}

// cursors starts a walk of the pending queues: for each model but those
// skip names, a cursor on the head of its queue and one on the head of
// each of its parked queues whose owner merge accepts (nil: all); s.mu
// is held. The slice is the store's, reused by the next walk.
func (s *Store) cursors(skip, merge func(name string) bool) []queueCursor {
	out := s.walk[:0]
	defer func() { s.walk = out }()
	for name, m := range s.models {
		if (m.queue.root == 0 && len(m.parked) == 0) || (skip != nil && skip(name)) {
			continue
		}
		home := len(out)
		out = append(out, queueCursor{model: name, queue: &m.queue, at: m.queue.head(), home: home})
		for owner, q := range m.parked {
			if merge == nil || merge(owner) {
				out = append(out, queueCursor{model: name, queue: q, parked: true, at: q.head(), home: home})
			}
		}
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
func (s *Store) advance(c *queueCursor) { c.at = c.queue.after(s.recs.at(c.at).fair.key) }

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
