package memory

import (
	"context"
	"fmt"
	"slices"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/store/storekit"
)

// CreateTask debits t.Cost and stores t as pending in one step.
func (s *Store) CreateTask(_ context.Context, t *imagegen.Task) (int64, error) {
	if err := storekit.CheckNewTask(t); err != nil {
		return 0, err
	}
	now := s.lock()
	defer s.mu.Unlock()
	if _, ok := s.tasks[t.ID]; ok {
		return 0, fmt.Errorf("memory: task %q exists", t.ID)
	}
	balance, err := s.appendEntry(imagegen.LedgerEntry{
		Owner: t.Owner, Kind: imagegen.LedgerCharge, Amount: -t.Cost, Ref: imagegen.ChargeRef(t.ID),
	}, now)
	if err != nil {
		return balance, err
	}
	t.Status, t.Attempt = imagegen.StatusPending, 0
	t.CreatedAt, t.UpdatedAt, t.RunAfter = now, now, now
	s.seq++
	r := &record{task: copyTask(*t), seq: s.seq}
	s.tasks[t.ID] = r
	s.ownerTasks[t.Owner] = append(s.ownerTasks[t.Owner], t.ID)
	if n := len(s.ownerTasks[t.Owner]); n >= 64 && n&(n-1) == 0 {
		s.compactOwnerTasks(t.Owner) // at powers of two: amortised O(1)
	}
	s.all = append(s.all, r)
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

// enqueue puts r in the pending queue, at its RunAfter; s.mu is held.
func (s *Store) enqueue(r *record) {
	s.seq++
	r.queued = queueKey{runAfter: r.task.RunAfter, seq: s.seq}
	s.pending.push(r.queued, r)
}

// dequeue takes r out of the pending queue, if it is there; s.mu is
// held.
func (s *Store) dequeue(r *record) {
	if r.queued.seq != 0 {
		s.pending.remove(r.queued)
		r.queued = queueKey{}
	}
}

func copyTask(t imagegen.Task) imagegen.Task {
	t.Request.ImageInput = slices.Clone(t.Request.ImageInput)
	t.Images = slices.Clone(t.Images)
	return t
}
