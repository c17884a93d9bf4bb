package memory

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/imagegen/imagegen"
)

// CreateTask debits t.Cost and stores t as pending in one step.
func (s *Store) CreateTask(_ context.Context, t *imagegen.Task) (int64, error) {
	if t.ID == "" || t.Owner == "" {
		return 0, errors.New("memory: task needs an ID and an Owner")
	}
	if t.Cost <= 0 {
		return 0, fmt.Errorf("memory: task cost must be positive (got %d)", t.Cost)
	}
	now := s.lock()
	defer s.mu.Unlock()
	if _, ok := s.tasks[t.ID]; ok {
		return 0, fmt.Errorf("memory: task %q exists", t.ID)
	}
	balance, err := s.appendEntry(imagegen.LedgerEntry{
		Owner: t.Owner, Kind: imagegen.LedgerCharge, Amount: -t.Cost, Ref: "task:" + t.ID,
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
	s.enqueue(r)
	return balance, nil
}

// Task returns a copy of owner's task.
func (s *Store) Task(_ context.Context, owner, id string) (*imagegen.Task, error) {
	s.lock()
	defer s.mu.Unlock()
	r, ok := s.tasks[id]
	if !ok || r.task.Owner != owner {
		return nil, imagegen.ErrTaskNotFound
	}
	t := copyTask(r.task)
	return &t, nil
}

// ClaimTask leases the oldest ready pending task.
func (s *Store) ClaimTask(_ context.Context, lease time.Duration) (*imagegen.Task, error) {
	now := s.lock()
	defer s.mu.Unlock()
	return s.claim(now, lease)
}

// ClaimTasks leases up to n ready pending tasks, oldest first.
func (s *Store) ClaimTasks(_ context.Context, lease time.Duration, n int) ([]*imagegen.Task, error) {
	now := s.lock()
	defer s.mu.Unlock()
	var out []*imagegen.Task
	for len(out) < n {
		t, err := s.claim(now, lease)
		if err != nil {
			break
		}
		out = append(out, t)
	}
	if len(out) == 0 {
		return nil, imagegen.ErrNoTask
	}
	return out, nil
}

// claim leases the head of the queue if it is ready; s.mu is held.
func (s *Store) claim(now time.Time, lease time.Duration) (*imagegen.Task, error) {
	for len(s.pending) > 0 {
		head := s.pending[0]
		if head.seq != head.rec.queued {
			heap.Pop(&s.pending) // left behind by a cancel
			continue
		}
		if head.runAfter.After(now) {
			break
		}
		heap.Pop(&s.pending)
		r := head.rec
		r.queued = 0
		r.task.Status = imagegen.StatusProcessing
		r.task.Attempt++
		r.task.LeaseUntil = now.Add(lease)
		r.task.UpdatedAt = now
		s.processing[r.task.ID] = r
		t := copyTask(r.task)
		return &t, nil
	}
	return nil, imagegen.ErrNoTask
}

// RenewLease extends the lease of the holder of attempt.
func (s *Store) RenewLease(_ context.Context, id string, attempt int, lease time.Duration) error {
	now := s.lock()
	defer s.mu.Unlock()
	r, err := s.holder(id, attempt)
	if err != nil {
		return err
	}
	r.task.LeaseUntil = now.Add(lease)
	r.task.UpdatedAt = now
	return nil
}

// CompleteTask stores the images and moves the task to success. The
// images' Data is kept as given; callers must not modify it afterwards.
func (s *Store) CompleteTask(_ context.Context, id string, attempt int, images []imagegen.Image) error {
	for _, img := range images {
		if img.ID == "" {
			return errors.New("memory: image needs an ID")
		}
	}
	now := s.lock()
	defer s.mu.Unlock()
	r, err := s.holder(id, attempt)
	if err != nil {
		return err
	}
	expires := now.Add(s.retention)
	ids := make([]string, 0, len(images))
	for _, img := range images {
		img.TaskID, img.ExpiresAt = id, expires
		s.images[img.ID] = &img
		ids = append(ids, img.ID)
	}
	r.task.Images = ids
	s.finish(r, imagegen.StatusSuccess, now)
	return nil
}

// FailTask moves the task to failed and refunds it once.
func (s *Store) FailTask(_ context.Context, id string, attempt int, f imagegen.Failure) error {
	now := s.lock()
	defer s.mu.Unlock()
	r, err := s.holder(id, attempt)
	if err != nil {
		return err
	}
	s.fail(r, f, now)
	return nil
}

// RetryTask gives the task back to the queue, ready after delay.
func (s *Store) RetryTask(_ context.Context, id string, attempt int, delay time.Duration, lastErr string) error {
	now := s.lock()
	defer s.mu.Unlock()
	r, err := s.holder(id, attempt)
	if err != nil {
		return err
	}
	r.task.LastError = lastErr
	s.requeue(r, now.Add(delay), now)
	return nil
}

// CancelTask fails owner's pending or processing task and refunds it.
func (s *Store) CancelTask(_ context.Context, owner, id string) error {
	now := s.lock()
	defer s.mu.Unlock()
	r, ok := s.tasks[id]
	if !ok || r.task.Owner != owner {
		return imagegen.ErrTaskNotFound
	}
	if r.task.Status.Terminal() {
		return fmt.Errorf("memory: cancel %s task: %w", r.task.Status, imagegen.ErrInvalidTransition)
	}
	r.queued = 0 // a pending task's queue entry is skipped when popped
	s.fail(r, imagegen.Failure{Code: imagegen.CodeCancelled, Message: imagegen.CancelledMessage}, now)
	return nil
}

// RecoverExpired requeues tasks whose lease ended, or fails and refunds
// those that have had maxAttempts attempts.
func (s *Store) RecoverExpired(_ context.Context, maxAttempts int) (int, error) {
	now := s.lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.processing {
		if now.Before(r.task.LeaseUntil) {
			continue
		}
		n++
		if r.task.Attempt >= maxAttempts {
			s.fail(r, imagegen.Failure{Code: imagegen.CodeInternal, Message: fmt.Sprintf("image generation did not finish (%d attempts)", r.task.Attempt)}, now)
			continue
		}
		r.task.LastError = "lease expired"
		s.requeue(r, now, now)
	}
	return n, nil
}

// Image returns a stored image. Its Data is shared, not copied.
func (s *Store) Image(_ context.Context, id string) (*imagegen.Image, error) {
	s.lock()
	defer s.mu.Unlock()
	img, ok := s.images[id]
	if !ok {
		return nil, imagegen.ErrImageNotFound
	}
	c := *img
	return &c, nil
}

// holder returns the task if attempt holds its lease.
func (s *Store) holder(id string, attempt int) (*record, error) {
	r, ok := s.tasks[id]
	if !ok || r.task.Status != imagegen.StatusProcessing || r.task.Attempt != attempt {
		return nil, fmt.Errorf("memory: task %s attempt %d: %w", id, attempt, imagegen.ErrLeaseLost)
	}
	return r, nil
}

func (s *Store) enqueue(r *record) {
	s.seq++
	r.queued = s.seq
	heap.Push(&s.pending, queued{runAfter: r.task.RunAfter, seq: s.seq, rec: r})
}

func (s *Store) requeue(r *record, runAfter, now time.Time) {
	delete(s.processing, r.task.ID)
	r.task.Status = imagegen.StatusPending
	r.task.LeaseUntil = time.Time{}
	r.task.RunAfter = runAfter
	r.task.UpdatedAt = now
	s.enqueue(r)
}

// fail ends the task as failed and refunds its cost, once.
func (s *Store) fail(r *record, f imagegen.Failure, now time.Time) {
	if !r.task.Refunded {
		// The refund reference is unique per task, so it cannot collide.
		_, _ = s.appendEntry(imagegen.LedgerEntry{
			Owner: r.task.Owner, Kind: imagegen.LedgerRefund, Amount: r.task.Cost, Ref: "refund:" + r.task.ID,
		}, now)
		r.task.Refunded = true
	}
	r.task.Error, r.task.ErrorCode = f.Message, f.Code
	s.finish(r, imagegen.StatusFailed, now)
}

func (s *Store) finish(r *record, status imagegen.Status, now time.Time) {
	delete(s.processing, r.task.ID)
	r.task.Status = status
	r.task.LeaseUntil = time.Time{}
	r.task.UpdatedAt, r.task.FinishedAt = now, now
	r.task.ExpiresAt = now.Add(s.retention)
	heap.Push(&s.expiring, expiry{at: r.task.ExpiresAt, id: r.task.ID})
	s.queueWebhook(r, now)
	s.notifyFinished(r.task.ID)
}

func copyTask(t imagegen.Task) imagegen.Task {
	t.Request.ImageInput = slices.Clone(t.Request.ImageInput)
	t.Images = slices.Clone(t.Images)
	return t
}
