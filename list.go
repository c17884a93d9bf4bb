package imagegen

import (
	"context"
	"errors"
	"fmt"
)

// Listing limits.
const (
	DefaultListLimit = 20
	MaxListLimit     = 100
)

// ListTasks returns a page of owner's tasks, newest first: up to limit
// (0 means DefaultListLimit, at most MaxListLimit), only those with the
// given status unless it is "", after cursor (from the previous page's
// Next; "" for the first page).
func (s *Service) ListTasks(ctx context.Context, owner string, status Status, limit int, cursor string) (TaskPage, error) {
	if status != "" && !status.Valid() {
		return TaskPage{}, errBadStatus()
	}
	limit, err := checkPage(limit, cursor)
	if err != nil {
		return TaskPage{}, err
	}
	page, err := s.cfg.Store.ListTasks(ctx, owner, status, limit, cursor)
	return storePage("tasks", page, err)
}

// storePage turns a store's answer for one page into the Service's: a
// cursor the store refused is the caller's mistake (a ValidationError on
// "cursor"), any other error is wrapped with what was listed.
func storePage[P any](what string, page P, err error) (P, error) {
	var none P
	if errors.Is(err, ErrInvalidParams) {
		return none, errBadCursor()
	}
	if err != nil {
		return none, fmt.Errorf("imagegen: list %s: %w", what, err)
	}
	return page, nil
}

func errBadStatus() error {
	return invalid("status", "must be one of pending, processing, success, failed")
}

func errBadCursor() error { return invalid("cursor", "is not a cursor this server gave") }

// checkPage applies the paging rules shared by the task list and the
// ledger, and returns the limit to use.
func checkPage(limit int, cursor string) (int, error) {
	switch {
	case limit == 0:
		limit = DefaultListLimit
	case limit < 0 || limit > MaxListLimit:
		return 0, invalid("limit", "must be 1 to %d", MaxListLimit)
	}
	if len(cursor) > 256 {
		return 0, errBadCursor()
	}
	return limit, nil
}

// QueuePositions returns, for each of the tasks, how many pending tasks
// are ahead of it in the work queue, or -1 when it is not pending. The
// answer is a snapshot: workers may claim tasks the moment after.
func (s *Service) QueuePositions(ctx context.Context, tasks []*Task) ([]int, error) {
	out := make([]int, len(tasks))
	var ids []string
	var at []int
	for i, t := range tasks {
		out[i] = -1
		if t.Status == StatusPending {
			ids, at = append(ids, t.ID), append(at, i)
		}
	}
	if len(ids) == 0 {
		return out, nil
	}
	pos, err := s.cfg.Store.QueuePositions(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("imagegen: queue positions: %w", err)
	}
	if len(pos) != len(ids) {
		return nil, fmt.Errorf("imagegen: queue positions: the store answered %d for %d tasks", len(pos), len(ids))
	}
	for j, i := range at {
		out[i] = pos[j]
	}
	return out, nil
}
