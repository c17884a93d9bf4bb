package memory

import (
	"context"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/store/storekit"
)

// ownerState is what fair share and the caps keep of one owner.
type ownerState struct {
	weight  int               // 1 unless set
	last    int64             // the tag of the owner's last queued task
	pending int               // pending tasks
	running map[slot]struct{} // processing tasks (some may have an ended lease)
}

// modelState is what the caps and rates keep of one model.
type modelState struct {
	// queue holds the model's pending tasks in claim order, but those
	// parked (parked.go) and those delayed (delayed.go): parked holds
	// the parked ones, also in claim order, and parkedOwners, made when
	// a task is first parked, each parked owner's in its ring, where look
	// is the owner a claim looks at first (nil when none is parked);
	// delayed holds the retries moved out of the way while they wait out
	// their delay, in claim order, and due the same by RunAfter.
	queue        pendingQueue
	parked       pendingQueue
	parkedOwners map[string]*parkedOwner
	look         *parkedOwner
	delayed      pendingQueue
	due          minHeap[dueEntry]
	running      map[slot]struct{}
	nextStart    time.Time // the rate's next allowed start
	pausedUntil  time.Time // PauseModel
}

// owner returns owner's state, made on first use; s.mu is held.
func (s *Store) owner(owner string) *ownerState {
	o, ok := s.owners[owner]
	if !ok {
		o = &ownerState{weight: 1, running: make(map[slot]struct{})}
		s.owners[owner] = o
	}
	return o
}

// model returns model's state, made on first use; s.mu is held.
func (s *Store) model(model string) *modelState {
	m, ok := s.models[model]
	if !ok {
		m = &modelState{queue: pendingQueue{recs: &s.recs}, parked: pendingQueue{recs: &s.recs}, delayed: pendingQueue{recs: &s.recs}, running: make(map[slot]struct{})}
		s.models[model] = m
	}
	return m
}

// startRunning counts r, just claimed, against its owner and model.
func (s *Store) startRunning(r task) {
	s.owner(r.owner()).running[r.slot] = struct{}{}
	s.model(r.model()).running[r.slot] = struct{}{}
}

// stopRunning gives back r's slots: it left processing.
func (s *Store) stopRunning(r task) {
	delete(s.owner(r.owner()).running, r.slot)
	delete(s.model(r.model()).running, r.slot)
}

// live counts the tasks of running whose lease has not ended.
func (s *Store) live(running map[slot]struct{}, now time.Time) int {
	n, at := 0, stampOf(now)
	for i := range running {
		if at.before(s.recs.at(i).leaseUntil) {
			n++
		}
	}
	return n
}

// holds decides, during one pass over the queue, which ready tasks may
// start: it counts the tasks the pass has already picked.
type holds struct {
	s      *Store
	now    time.Time
	l      imagegen.Limits
	owners map[string]int       // running (live) plus picked, by owner
	models map[string]int       // likewise by model
	next   map[string]time.Time // rated models' next start after the picks
}

// newHolds starts a pass; its maps are made when a cap or a rate first
// needs them, so that a claim under no limits counts nothing.
func (s *Store) newHolds(now time.Time, l imagegen.Limits) *holds {
	return &holds{s: s, now: now, l: l}
}

// reason says why r may not start now, or "" when it may.
func (h *holds) reason(r task) imagegen.HoldReason {
	if h.ownerHeld(r.owner()) {
		return imagegen.HeldOwnerCap
	}
	return h.modelHeld(r.model())
}

// ownerHeld says whether owner is at its cap under h's limits and picks.
func (h *holds) ownerHeld(owner string) bool {
	c := h.l.OwnerConcurrency
	return c > 0 && h.running(&h.owners, owner, h.s.owner(owner).running) >= c
}

// running is name's count in *counts: its live running tasks, read
// once, plus this pass's picks.
func (h *holds) running(counts *map[string]int, name string, running map[slot]struct{}) int {
	n, ok := (*counts)[name]
	if !ok {
		if *counts == nil {
			*counts = map[string]int{}
		}
		n = h.s.live(running, h.now)
		(*counts)[name] = n
	}
	return n
}

func (h *holds) nextStart(model string) time.Time {
	t, ok := h.next[model]
	if !ok {
		t = h.s.model(model).nextStart
		if h.next == nil {
			h.next = map[string]time.Time{}
		}
		h.next[model] = t
	}
	return t
}

// take counts r as started by this pass, where a cap or a rate needs it.
func (h *holds) take(r task) {
	owner, model := r.owner(), r.model()
	if h.l.OwnerConcurrency > 0 {
		n := h.running(&h.owners, owner, h.s.owner(owner).running) // makes h.owners
		h.owners[owner] = n + 1
	}
	if h.l.ModelCap(model) > 0 {
		n := h.running(&h.models, model, h.s.model(model).running)
		h.models[model] = n + 1
	}
	if rate := h.l.ModelStartRate(model); rate > 0 {
		next := maxTime(h.nextStart(model), h.now).Add(time.Minute / time.Duration(rate))
		h.next[model] = next // nextStart made the map
		h.s.model(model).nextStart = next
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// scan walks the pending tasks in claim order and hands take up to n
// that may start now; s.mu is held. take must not change the queues.
//
// The walk merges the models' queues. A model that may not start now
// is passed over whole, its tasks unread (its parked ones too), and
// drops out of the walk once it may not start another. Within a model
// the walk moves each task it meets that may not start out of its way,
// so that it reads it no more while it stays so. A retry met waiting
// out its delay moves into its model's delayed set (delayed.go), at
// most delayMost a model and walk (the model then drops out of the
// walk), and each walk first moves back those whose delay has passed
// (as many at most): else more of them than a look-ahead at the head
// of a model's queue would hold back every other task of the model
// until their delay passed. A task of an owner at its cap met in the
// model's queue is parked (parked.go), uncounted: otherwise an owner
// whose slow tasks hold its slots, its backlog fallen behind the tags
// now served, would hold back every other owner of the model, or cost
// every claim a read of its backlog. The walk looks at parkedLook of
// the model's parked owners and merges the parked list of each that may
// start a task (each of them when l has no owner cap), and leaves one
// once its owner reaches its cap; a parked owner's task met in the
// model's queue while its list is not merged is parked too, behind its
// older ones. So a claim's work is bounded by n, parkedLook running counts for each model
// with parked owners, the tasks it parks (each task once while it
// waits), 2 × delayMost tasks moved for each model with retries
// waiting and the parked tasks of the owners merged, whatever the
// queues' length.
func (s *Store) scan(now time.Time, l imagegen.Limits, n int, take func(task)) {
	h := s.newHolds(now, l)
	at := stampOf(now)
	for _, m := range s.models {
		if len(m.due) != 0 {
			s.promote(m, at)
		}
	}
	held := func(model string) bool { return h.modelHeld(model) != "" }
	free := func(owner string) bool { return !h.ownerHeld(owner) }
	cs := s.cursors(held, free)
	for taken := 0; taken < n; {
		i := s.lowest(cs)
		if i < 0 {
			return
		}
		c := &cs[i]
		r := s.recs.at(c.at)
		s.advance(c)
		// The model was judged as the cursor was made and after each
		// take from it (a model held drops out): only the owner is left.
		owner := r.owner()
		capped := h.ownerHeld(owner)
		switch {
		case capped && c.owner != nil:
			c.at = 0 // its owner reached its cap in this walk
		case capped, c.owner == nil && c.m.unmerged(owner, s.walks):
			s.park(c.m, r)
		case at.before(r.runAfter):
			home := &cs[c.home]
			if home.delayed++; home.delayed > delayMost {
				stop(cs, c)
				break
			}
			s.delay(c.m, r)
		default:
			h.take(r)
			take(r)
			taken++
			if held(c.model) {
				stop(cs, c)
			}
		}
	}
}

// SetOwnerWeight sets owner's fair-share weight.
func (s *Store) SetOwnerWeight(_ context.Context, owner string, weight int) error {
	if err := storekit.CheckOwnerWeight(owner, weight); err != nil {
		return err
	}
	s.lock()
	defer s.mu.Unlock()
	s.owner(owner).weight = weight
	return nil
}

// OwnerWeight returns owner's fair-share weight.
func (s *Store) OwnerWeight(_ context.Context, owner string) (int, error) {
	s.lock()
	defer s.mu.Unlock()
	if o, ok := s.owners[owner]; ok {
		return o.weight, nil
	}
	return 1, nil
}

// PauseModel holds back model's starts until d from now.
func (s *Store) PauseModel(_ context.Context, model string, d time.Duration) error {
	now := s.lock()
	defer s.mu.Unlock()
	m := s.model(model)
	m.pausedUntil = maxTime(m.pausedUntil, now.Add(d))
	return nil
}

// SchedulerStats reports what l holds back among the first
// SchedulerScan pending tasks (parked ones included, in claim order),
// and the owners with the most pending
// tasks (all of them counted).
func (s *Store) SchedulerStats(_ context.Context, l imagegen.Limits) (imagegen.SchedulerStats, error) {
	now := s.lock()
	defer s.mu.Unlock()
	st := imagegen.SchedulerStats{Held: map[imagegen.HoldReason]int{}, Paused: map[string]time.Time{}}
	h := s.newHolds(now, l)
	at := stampOf(now)
	cs := s.cursors(nil, nil)
	for seen := 0; seen < imagegen.SchedulerScan; seen++ {
		i := s.lowest(cs)
		if i < 0 {
			break
		}
		r := s.recs.at(cs[i].at)
		s.advance(&cs[i])
		if !at.before(r.runAfter) {
			if why := h.reason(r); why != "" {
				st.Held[why]++
			}
		}
	}
	for name, o := range s.owners {
		if o.pending > 0 {
			st.Busiest = append(st.Busiest, imagegen.OwnerLoad{Owner: name, Pending: o.pending, Running: s.live(o.running, now)})
		}
	}
	st.Busiest = storekit.SortBusiest(st.Busiest)
	for name, m := range s.models {
		if now.Before(m.pausedUntil) {
			st.Paused[name] = m.pausedUntil
		}
	}
	return st, nil
}
