package memory

import "github.com/imagegen/imagegen"

// Each model's pending tasks form a queue of their own (modelState.queue),
// ordered by the fair-share key the task was queued under; the claim
// order is the merge of these queues, lowest key first, the same order
// one queue of every task would give. Keeping them apart lets a claim
// pass over a model that may not start now (paused, at its cap, waiting
// for its rate) without reading its tasks, however many there are.

// queueCursor walks one model's queue in claim order.
type queueCursor struct {
	model  string
	queue  *pendingQueue
	at     slot // the entry the cursor is on; 0 once it has passed the end
	passed int  // tasks of this queue the walk passed over
}

// cursors starts a walk of the pending queues, one cursor on the head of
// each model's queue but those skip names; s.mu is held. The slice is
// the store's, reused by the next walk.
func (s *Store) cursors(skip func(model string) bool) []queueCursor {
	out := s.walk[:0]
	defer func() { s.walk = out }()
	for name, m := range s.models {
		if at := m.queue.head(); at != 0 && (skip == nil || !skip(name)) {
			out = append(out, queueCursor{model: name, queue: &m.queue, at: at})
		}
	}
	return out
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
// queue; s.mu is held.
func (s *Store) ahead(key queueKey) int {
	n := 0
	for _, m := range s.models {
		n += m.queue.ahead(key)
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
