package imagegen

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
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
//
// Cursors are opaque: the store's cursor sealed (listcursor.go) under
// the key the store shares as ListCursorSecretName, bound to owner and
// to the task list (not to status: a cursor is a place in the owner's
// list). A cursor tells its holder nothing about other owners (not how
// many tasks were made between two pages), and one that does not open
// for this owner and list (altered, another owner's, the ledger's, one
// from before an upgrade or under a replaced key) is a ValidationError
// on "cursor": the client starts again from the first page.
func (s *Service) ListTasks(ctx context.Context, owner string, status Status, limit int, cursor string) (TaskPage, error) {
	if status != "" && !status.Valid() {
		return TaskPage{}, errBadStatus()
	}
	limit, err := checkPage(limit, cursor)
	if err != nil {
		return TaskPage{}, err
	}
	return ownerPage(ctx, s, "tasks", owner, cursor, func(after string) (TaskPage, error) {
		return s.cfg.Store.ListTasks(ctx, owner, status, limit, after)
	}, func(p *TaskPage) *string { return &p.Next })
}

// ownerPage is one page of owner's list of kind what ("tasks" or
// "ledger") from cursor, one it gave before ("" for the first page): it
// opens cursor into the store's (listCursors), reads the page after it
// (list), and seals the page's next cursor (which next points at) for
// the caller.
func ownerPage[P any](ctx context.Context, s *Service, what, owner, cursor string, list func(after string) (P, error), next func(*P) *string) (P, error) {
	var none P
	cursors := s.listCursors(listing{kind: what, owner: owner})
	after, err := cursors.open(ctx, cursor)
	if err != nil {
		return none, err
	}
	page, err := list(after)
	if page, err = storePage(what, page, err); err != nil {
		return none, err
	}
	if *next(&page), err = cursors.seal(ctx, *next(&page)); err != nil {
		return none, err
	}
	return page, nil
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

func errBadCursor() error {
	return invalid("cursor", "is not a cursor this server gave for this list; list again from the first page")
}

// maxCursorLen is the longest cursor a list takes (and gives).
const maxCursorLen = 256

// checkPage applies the paging rules shared by the task list and the
// ledger, and returns the limit to use.
func checkPage(limit int, cursor string) (int, error) {
	switch {
	case limit == 0:
		limit = DefaultListLimit
	case limit < 0 || limit > MaxListLimit:
		return 0, invalid("limit", "must be 1 to %d", MaxListLimit)
	}
	if len(cursor) > maxCursorLen {
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

// startWindow is how far back EstimatedStarts counts recent starts.
const startWindow = 5 * time.Minute

// EstimatedStarts estimates, for each queue position (as QueuePositions
// returns them), when the task will start: the tasks ahead of it and
// itself at the rate tasks started in the last minutes, by the
// providers' calls every worker counts in the store (ProviderStats). A
// position of -1, no recent start or a failed read gives the zero time.
// It is an estimate: the rate changes, and later owners may go first.
func (s *Service) EstimatedStarts(ctx context.Context, positions []int) []time.Time {
	out := make([]time.Time, len(positions))
	if !slices.ContainsFunc(positions, func(p int) bool { return p >= 0 }) {
		return out
	}
	st, err := s.cfg.Store.ProviderStats(ctx, startWindow)
	if err != nil {
		return out
	}
	var started int64
	for _, r := range st.Requests {
		started += r.N
	}
	if started == 0 {
		return out
	}
	each := startWindow / time.Duration(started)
	now := s.cfg.Clock.Now()
	for i, p := range positions {
		if p >= 0 {
			out[i] = now.Add(time.Duration(p+1) * each)
		}
	}
	return out
}
