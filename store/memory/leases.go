package memory

import (
	"context"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/store/internal/leases"
	"github.com/imagegen/imagegen/store/storekit"
)

// ClaimTask leases the next ready pending task in fair-share order.
func (s *Store) ClaimTask(ctx context.Context, lease time.Duration) (*imagegen.Task, error) {
	return leases.First(s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: lease, N: 1}))
}

// ClaimTasks leases up to p.N ready pending tasks in fair-share order,
// passing over those that p.Limits holds back.
func (s *Store) ClaimTasks(_ context.Context, p imagegen.ClaimParams) ([]*imagegen.Task, error) {
	now := s.lock()
	defer s.mu.Unlock()
	var picked []task
	s.scan(now, p.Limits, max(p.N, 1), func(r task) { picked = append(picked, r) })
	if len(picked) == 0 {
		return nil, imagegen.ErrNoTask
	}
	out := make([]*imagegen.Task, len(picked))
	for i, r := range picked {
		out[i] = s.claim(r, now, p.Lease)
	}
	return out, nil
}

// claim leases r, a ready pending task; s.mu is held.
func (s *Store) claim(r task, now time.Time, lease time.Duration) *imagegen.Task {
	s.vtime = max(s.vtime, r.fair.key.order)
	s.dequeue(r)
	r.status = statusProcessing
	r.attempt++
	r.progress = 0
	r.leaseUntil = stampOf(now.Add(lease))
	r.updatedAt = stampOf(now)
	if r.startedAt.isZero() {
		r.startedAt = r.updatedAt
		s.queueWebhook(r, imagegen.EventProcessing, now)
	}
	s.processing[r.slot] = struct{}{}
	s.startRunning(r)
	t := r.view(s.loc)
	return &t
}

// RenewLease extends the lease of the holder of attempt while it runs.
// A lease that has ended is not renewed (ErrLeaseLost): its task no
// longer counts against the caps, and another may have taken its slot.
func (s *Store) RenewLease(_ context.Context, id string, attempt int, lease time.Duration) error {
	now := s.lock()
	defer s.mu.Unlock()
	r, ok := s.holder(id, attempt)
	if !ok || !stampOf(now).before(r.leaseUntil) {
		return leases.Lost("memory", id, attempt)
	}
	r.leaseUntil = stampOf(now.Add(lease))
	r.updatedAt = stampOf(now)
	return nil
}

// SetProgress records the generation's progress on the task attempt
// holds.
func (s *Store) SetProgress(_ context.Context, id string, attempt int, progress float64) error {
	return s.asHolder(id, attempt, func(r task, _ time.Time) { r.progress = progress })
}

// RetryTask gives the task back to the queue, ready after delay.
func (s *Store) RetryTask(_ context.Context, id string, attempt int, delay time.Duration, lastErr string) error {
	return s.asHolder(id, attempt, func(r task, now time.Time) {
		r.extras().lastErr = lastErr
		s.requeue(r, now.Add(delay), now)
	})
}

// ReleaseTask gives the task back to the queue, ready now, without
// counting the attempt.
func (s *Store) ReleaseTask(_ context.Context, id string, attempt int) error {
	return s.asHolder(id, attempt, func(r task, now time.Time) {
		r.released++
		r.extras().lastErr = storekit.ReleasedMessage
		s.requeue(r, now, now)
	})
}

// RecoverExpired requeues tasks whose lease ended, or fails and refunds
// those that have had maxAttempts attempts, and reports them.
func (s *Store) RecoverExpired(_ context.Context, maxAttempts int) (imagegen.Recovery, error) {
	now := s.lock()
	defer s.mu.Unlock()
	var rec imagegen.Recovery
	for i := range s.processing {
		r := s.recs.at(i)
		if stampOf(now).before(r.leaseUntil) {
			continue
		}
		if counted := r.attempt - r.released; counted >= maxAttempts {
			failed := imagegen.ExpiredTask{
				ID: r.id(), Owner: r.owner(), Model: r.model(), RequestID: r.field(textRequestID),
				Attempts: counted, Cost: r.cost,
			}
			if !r.refunded {
				failed.Refund = r.cost
			}
			if _, err := s.fail(r, imagegen.Failure{Code: imagegen.CodeInternal, Message: storekit.ExpiredLeaseMessage(counted)}, now); err != nil {
				// Its owner's balance cannot take the refund: left as
				// it is, tried again later, behind the other leases.
				r.leaseUntil = stampOf(now.Add(unrefundableRetry))
				continue
			}
			rec.Failed = append(rec.Failed, failed)
			continue
		}
		r.extras().lastErr = "lease expired"
		s.requeue(r, now, now)
		rec.Requeued++
	}
	return rec, nil
}

// unrefundableRetry is how much longer recovery leaves the lease of a
// task it could not fail (its refund would take the owner's balance past
// math.MaxInt64), as the other stores do.
const unrefundableRetry = time.Minute

// asHolder makes change to task id under s.mu, at the store's time now,
// if attempt holds the task's lease; otherwise the lease is lost and
// nothing changes.
func (s *Store) asHolder(id string, attempt int, change func(r task, now time.Time)) error {
	now := s.lock()
	defer s.mu.Unlock()
	r, ok := s.holder(id, attempt)
	if !ok {
		return leases.Lost("memory", id, attempt)
	}
	change(r, now)
	return nil
}

// holder returns task id if attempt holds it (it is processing under
// that attempt, whether or not its lease has ended); s.mu is held.
func (s *Store) holder(id string, attempt int) (task, bool) {
	r, ok := s.find(id)
	if !ok || r.status != statusProcessing || r.attempt != attempt {
		return task{}, false
	}
	return r, true
}

func (s *Store) requeue(r task, runAfter, now time.Time) {
	delete(s.processing, r.slot)
	s.stopRunning(r)
	r.status = statusPending
	r.leaseUntil = stamp{}
	r.runAfter = stampOf(runAfter)
	r.updatedAt = stampOf(now)
	s.enqueue(r)
}
