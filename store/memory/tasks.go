package memory

import (
	"context"
	"fmt"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/store/storekit"
)

// CreateTask debits t.Cost and stores t as pending in one step.
func (s *Store) CreateTask(_ context.Context, t *imagegen.Task, p imagegen.CreateParams) (int64, error) {
	if err := storekit.CheckNewTask(t); err != nil {
		return 0, err
	}
	now := s.lock()
	defer s.mu.Unlock()
	key := keyOf(t.ID)
	if _, ok := s.tasks.getKey(key); ok {
		return 0, fmt.Errorf("memory: task %q exists: %w", t.ID, imagegen.ErrDuplicateEntry)
	}
	if o := s.owners[t.Owner]; p.MaxPending > 0 && o != nil && o.pending >= p.MaxPending {
		return 0, fmt.Errorf("memory: owner has %d pending tasks: %w", o.pending, imagegen.ErrQueueFull)
	}
	charge := imagegen.LedgerEntry{Owner: t.Owner, Kind: imagegen.LedgerCharge, Amount: -t.Cost}
	ref := taskRef{form: refCharge, id: key.uuid} // the id parsed once
	if !key.isUUID {
		charge.Ref, ref = imagegen.ChargeRef(t.ID), taskRef{}
	}
	balance, err := s.appendEntryRef(charge, ref, now)
	if err != nil {
		return balance, err
	}
	t.Status, t.Attempt = imagegen.StatusPending, 0
	t.CreatedAt, t.UpdatedAt, t.RunAfter = now, now, now
	s.seq++
	i := s.recs.alloc()
	r := s.recs.at(i)
	r.set(t, s.seq, i)
	key.id = r.id() // the task's copy, which the index may keep
	s.tasks.put(key, i)
	owner := r.owner() // the record's copy, which the index shares
	ts := taskSlot{seq: r.seq, slot: i}
	s.ownerTasks[owner] = append(s.ownerTasks[owner], ts)
	if n := len(s.ownerTasks[owner]); n >= 64 && n&(n-1) == 0 {
		s.compactOwnerTasks(owner) // at powers of two: amortised O(1)
	}
	s.all = append(s.all, ts)
	s.enqueue(r)
	return balance, nil
}

// Task returns a copy of owner's task.
func (s *Store) Task(ctx context.Context, owner, id string) (*imagegen.Task, error) {
	t, err := s.TaskByID(ctx, id)
	if err == nil && t.Owner != owner {
		return nil, imagegen.ErrTaskNotFound
	}
	return t, err
}

// enqueue puts r in the pending queues: at its RunAfter, and at the end
// of its owner's line in fair-share order (a new tag); s.mu is held.
func (s *Store) enqueue(r task) {
	s.seq++
	r.queued = queueKey{order: r.runAfter.unixNano(), seq: s.seq}
	s.pending.push(r.queued, r.slot)
	o := s.owner(r.owner())
	m := s.model(r.model())
	head, queued := m.queue.headTag()
	base := storekit.QueueBase(s.vtime, head, queued)
	if o.pending > 0 {
		base = max(base, o.last)
	}
	o.last = base + storekit.Stride(o.weight)
	o.pending++
	m.queue.push(r.slot, queueKey{order: o.last, seq: s.seq})
}

// queuedNow reports whether r is in the pending queues.
func (r task) queuedNow() bool { return r.queued.seq != 0 }

// dequeue takes r out of the pending queues, if it is there; s.mu is
// held.
func (s *Store) dequeue(r task) {
	if r.queuedNow() {
		r.queued = queueKey{}
		s.pending.removed()
		s.model(r.model()).unqueue(r)
		r.fair = pendingNode{} // no links left into the queue
		s.owner(r.owner()).pending--
	}
}
