package memory

import (
	"context"
	"fmt"
	"sort"
	"strconv"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/store/storekit"
)

// Ping always succeeds: the store is in this process.
func (s *Store) Ping(context.Context) error { return nil }

// QueueStats counts pending and processing tasks; the oldest ready
// task, if any, is the head of the pending queue (which is in RunAfter
// order).
func (s *Store) QueueStats(context.Context) (imagegen.QueueStats, error) {
	now := s.lock()
	defer s.mu.Unlock()
	st := imagegen.QueueStats{Pending: int64(s.pending.Len()), Processing: int64(len(s.processing))}
	if r, ok := s.pending.first(); ok && !stampOf(now).before(r.runAfter) {
		st.OldestPending = now.Sub(r.runAfter.in(s.loc))
	}
	return st, nil
}

// TaskByID returns a copy of any owner's task.
func (s *Store) TaskByID(_ context.Context, id string) (*imagegen.Task, error) {
	s.lock()
	defer s.mu.Unlock()
	r, ok := s.find(id)
	if !ok {
		return nil, imagegen.ErrTaskNotFound
	}
	t := r.view(s.loc)
	return &t, nil
}

// ListAllTasks returns tasks of every owner (or f.Owner's), newest
// first. The cursor is the submission sequence number to continue below.
func (s *Store) ListAllTasks(_ context.Context, f imagegen.TaskFilter, limit int, cursor string) (imagegen.TaskPage, error) {
	s.lock()
	defer s.mu.Unlock()
	below, err := belowCursor(cursor)
	if err != nil {
		return imagegen.TaskPage{}, err
	}
	if s.allGone > len(s.all)/2 {
		s.compactAll()
	}
	// Newest first from below the cursor: a page costs what it walks,
	// not a sort of every task.
	i := sort.Search(len(s.all), func(i int) bool { return s.all[i].seq >= below }) - 1
	var page imagegen.TaskPage
	var last uint64 // the seq of the page's last task
	for ; i >= 0; i-- {
		r, ok := s.lookup(s.all[i])
		if !ok || !r.matches(f) {
			continue // removed by retention, or not asked for
		}
		if len(page.Tasks) == limit {
			page.Next = strconv.FormatUint(last, 10)
			break
		}
		t := r.view(s.loc)
		page.Tasks = append(page.Tasks, &t)
		last = r.seq
	}
	return page, nil
}

// compactAll drops from s.all the tasks that retention removed; s.mu is
// held. Cursors are sequence numbers, so compaction does not move them.
func (s *Store) compactAll() {
	kept := s.all[:0]
	for _, t := range s.all {
		if _, ok := s.lookup(t); ok {
			kept = append(kept, t)
		}
	}
	clear(s.all[len(kept):])
	s.all, s.allGone = kept, 0
}

func (r task) matches(f imagegen.TaskFilter) bool {
	return (f.Owner == "" || r.owner() == f.Owner) &&
		(f.Status == "" || r.status.name() == f.Status) &&
		(f.Since.IsZero() || !r.createdAt.before(stampOf(f.Since))) &&
		(f.Until.IsZero() || r.createdAt.before(stampOf(f.Until)))
}

// RequeueTask gives a failed task back to the queue, ready now. A
// recharge of a task never refunded is refused (see
// imagegen.OperatorStore).
func (s *Store) RequeueTask(_ context.Context, id string, recharge bool) error {
	now := s.lock()
	defer s.mu.Unlock()
	r, ok := s.find(id)
	if !ok {
		return imagegen.ErrTaskNotFound
	}
	if r.status != statusFailed {
		return fmt.Errorf("memory: requeue %s task: %w", r.status.name(), imagegen.ErrInvalidTransition)
	}
	if recharge && !r.refunded {
		// Its last charge is outstanding (its owner's cancel kept it): a
		// recharge would give it a second. Checked under the lock, with
		// the requeue, so no check made before can be outrun.
		return fmt.Errorf("memory: requeue %s: recharge of a task never refunded: %w", id, imagegen.ErrDuplicateEntry)
	}
	if recharge {
		_, err := s.appendEntry(imagegen.LedgerEntry{
			Owner: r.owner(), Kind: imagegen.LedgerCharge, Amount: -r.cost, Ref: imagegen.RechargeRef(id, r.attempt),
		}, now)
		if err != nil {
			return err
		}
		r.refunded = false
		r.extras().refundRef = imagegen.RerefundRef(id, r.attempt)
	}
	r.status = statusPending
	if x := r.extra; x != nil {
		x.err, x.code = "", ""
	}
	// Its deliveries still queued are dropped: its next ending queues
	// its own, due then, with no attempts.
	for _, hook := range storekit.TaskWebhookIDs(id) {
		delete(s.hooks, hook)
	}
	r.finishedAt, r.expiresAt = stamp{}, stamp{} // its expiry entry is skipped when popped
	r.updatedAt, r.runAfter = stampOf(now), stampOf(now)
	s.enqueue(r)
	return nil
}

// PurgeExpired removes what retention has made invisible. Every call
// of the store already does so on its way in, so this mostly reports
// what was due.
func (s *Store) PurgeExpired(context.Context) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sweep(s.clock.Now()), nil
}
