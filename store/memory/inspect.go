package memory

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/imagegen/imagegen"
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
	if r, ok := s.pending.first(); ok && !r.task.RunAfter.After(now) {
		st.OldestPending = now.Sub(r.task.RunAfter)
	}
	return st, nil
}

// TaskByID returns a copy of any owner's task.
func (s *Store) TaskByID(_ context.Context, id string) (*imagegen.Task, error) {
	s.lock()
	defer s.mu.Unlock()
	r, ok := s.tasks[id]
	if !ok {
		return nil, imagegen.ErrTaskNotFound
	}
	t := copyTask(r.task)
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
		r := s.all[i]
		if s.tasks[r.task.ID] != r || !matches(&r.task, f) {
			continue // removed by retention, or not asked for
		}
		if len(page.Tasks) == limit {
			page.Next = strconv.FormatUint(last, 10)
			break
		}
		t := copyTask(r.task)
		page.Tasks = append(page.Tasks, &t)
		last = r.seq
	}
	return page, nil
}

// compactAll drops from s.all the tasks that retention removed; s.mu is
// held. Cursors are sequence numbers, so compaction does not move them.
func (s *Store) compactAll() {
	kept := s.all[:0]
	for _, r := range s.all {
		if s.tasks[r.task.ID] == r {
			kept = append(kept, r)
		}
	}
	clear(s.all[len(kept):])
	s.all, s.allGone = kept, 0
}

func matches(t *imagegen.Task, f imagegen.TaskFilter) bool {
	return (f.Owner == "" || t.Owner == f.Owner) &&
		(f.Status == "" || t.Status == f.Status) &&
		(f.Since.IsZero() || !t.CreatedAt.Before(f.Since)) &&
		(f.Until.IsZero() || t.CreatedAt.Before(f.Until))
}

// RequeueTask gives a failed task back to the queue, ready now.
func (s *Store) RequeueTask(_ context.Context, id string, recharge bool) error {
	now := s.lock()
	defer s.mu.Unlock()
	r, ok := s.tasks[id]
	if !ok {
		return imagegen.ErrTaskNotFound
	}
	if r.task.Status != imagegen.StatusFailed {
		return fmt.Errorf("memory: requeue %s task: %w", r.task.Status, imagegen.ErrInvalidTransition)
	}
	if recharge {
		_, err := s.appendEntry(imagegen.LedgerEntry{
			Owner: r.task.Owner, Kind: imagegen.LedgerCharge, Amount: -r.task.Cost, Ref: imagegen.RechargeRef(id, r.task.Attempt),
		}, now)
		if err != nil {
			return err
		}
		r.task.Refunded = false
		r.refundRef = imagegen.RerefundRef(id, r.task.Attempt)
	}
	r.task.Status = imagegen.StatusPending
	r.task.Error, r.task.ErrorCode = "", ""
	r.task.FinishedAt, r.task.ExpiresAt = time.Time{}, time.Time{} // its expiry entry is skipped when popped
	r.task.UpdatedAt, r.task.RunAfter = now, now
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
