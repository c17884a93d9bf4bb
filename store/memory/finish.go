package memory

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/imagegen/imagegen"
)

// CompleteTask stores the images' records and moves the task to
// success, with seed (when not nil) as its seed.
func (s *Store) CompleteTask(_ context.Context, id string, attempt int, images []imagegen.Image, seed *int64) error {
	for _, img := range images {
		if img.ID == "" {
			return errors.New("memory: image needs an ID")
		}
	}
	return s.asHolder(id, attempt, func(r task, now time.Time) {
		expires := now.Add(s.retention)
		ids := make([]string, 0, len(images))
		for _, img := range images {
			img.TaskID, img.CreatedAt, img.ExpiresAt = id, now, expires
			s.images[img.ID] = &img
			ids = append(ids, img.ID)
		}
		r.extras().images = ids
		if seed != nil {
			r.seed, r.seeded = *seed, true
		}
		s.finish(r, imagegen.StatusSuccess, now)
	})
}

// FailTask moves the task to failed and refunds it once.
func (s *Store) FailTask(_ context.Context, id string, attempt int, f imagegen.Failure) (int64, error) {
	var refund int64
	var refused error
	err := s.asHolder(id, attempt, func(r task, now time.Time) {
		refund, refused = s.fail(r, f, now)
	})
	if err != nil {
		return 0, err
	}
	return refund, refused
}

// CancelTask fails owner's pending or processing task and refunds it,
// but for a processing one's when p.KeepStartedCharge: its charge is
// kept. The status is read and changed under one hold of s.mu.
func (s *Store) CancelTask(_ context.Context, owner, id string, p imagegen.CancelParams) (int64, error) {
	now := s.lock()
	defer s.mu.Unlock()
	r, ok := s.find(id)
	if !ok || r.owner() != owner {
		return 0, imagegen.ErrTaskNotFound
	}
	if r.status.terminal() {
		return 0, fmt.Errorf("memory: cancel %s task: %w", r.status.name(), imagegen.ErrInvalidTransition)
	}
	cancelled := imagegen.Failure{Code: imagegen.CodeCancelled, Message: imagegen.CancelledMessage}
	if p.KeepStartedCharge && r.status == statusProcessing {
		s.end(r, cancelled, now) // processing: in no queue
		return 0, nil
	}
	if err := s.canRefund(r); err != nil {
		return 0, err
	}
	s.dequeue(r)
	return s.fail(r, cancelled, now)
}

// canRefund returns an error, and fail would change nothing, when r's
// refund is due and its owner's balance cannot take it (it would pass
// math.MaxInt64); s.mu is held.
func (s *Store) canRefund(r task) error {
	if r.refunded {
		return nil
	}
	if a := s.accounts[r.owner()]; a != nil && a.balance > math.MaxInt64-r.cost {
		return fmt.Errorf("memory: task %s: the owner's balance cannot take the refund of %d (it would pass %d); nothing changed",
			r.id(), r.cost, int64(math.MaxInt64))
	}
	return nil
}

// fail ends the task as failed and refunds its cost, once. It returns
// the credits it gave back (0 when the task was refunded before), or
// canRefund's error, having changed nothing, when the refund cannot be
// made.
func (s *Store) fail(r task, f imagegen.Failure, now time.Time) (refund int64, err error) {
	if err := s.canRefund(r); err != nil {
		return 0, err
	}
	if !r.refunded {
		refund = r.cost
		// The refund reference is unique per task (and per operator's
		// recharge), so it cannot collide; canRefund checked the balance.
		if _, err := s.appendEntry(imagegen.LedgerEntry{
			Owner: r.owner(), Kind: imagegen.LedgerRefund, Amount: r.cost, Ref: r.refundRef(),
		}, now); err != nil {
			return 0, err
		}
		r.refunded = true
	}
	s.end(r, f, now)
	return refund, nil
}

// end moves r to failed with f as its error and refunds nothing: fail
// refunds, then ends; a cancel that keeps the charge only ends.
func (s *Store) end(r task, f imagegen.Failure, now time.Time) {
	o := r.extras()
	o.err, o.code = f.Message, f.Code
	s.finish(r, imagegen.StatusFailed, now)
}

func (s *Store) finish(r task, status imagegen.Status, now time.Time) {
	delete(s.processing, r.slot)
	s.stopRunning(r)
	r.status = statusOf(status)
	expires := now.Add(s.retention)
	r.leaseUntil = stamp{}
	r.updatedAt, r.finishedAt = stampOf(now), stampOf(now)
	r.expiresAt = stampOf(expires)
	heap.Push(&s.expiring, taskExpiry{at: r.expiresAt, task: taskSlot{seq: r.seq, slot: r.slot}})
	s.queueWebhook(r, imagegen.EventCompleted, now)
	s.notifyFinished(r.id())
}
