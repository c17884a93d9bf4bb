package memory

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/store/storekit"
)

// ListTasks returns a page of owner's tasks, newest first. The cursor is
// the position in the owner's submission order to continue below. A
// page reads at most storekit.ListScan(limit) of the owner's tasks (a
// binary search finds where it starts): when a status filter matches
// fewer within them, the page is short and its Next goes on below the
// last task read, so that no call holds the store's lock for a read of
// every task the owner keeps.
func (s *Store) ListTasks(_ context.Context, owner string, status imagegen.Status, limit int, cursor string) (imagegen.TaskPage, error) {
	s.lock()
	defer s.mu.Unlock()
	below, err := belowCursor(cursor)
	if err != nil {
		return imagegen.TaskPage{}, err
	}
	ts := s.ownerTasks[owner] // oldest first; entries of removed tasks are skipped (compactOwnerTasks drops them)
	start := sort.Search(len(ts), func(i int) bool { return ts[i].seq >= below }) - 1
	var page imagegen.TaskPage
	var last uint64 // the seq of the page's last task
	budget := storekit.ListScan(limit)
	for i := start; i >= 0; i-- {
		if budget == 0 {
			page.Next = strconv.FormatUint(ts[i+1].seq, 10) // the last one read
			break
		}
		budget--
		r, ok := s.lookup(ts[i])
		if !ok || (status != "" && r.status.name() != status) {
			continue
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

// belowCursor returns the submission sequence number a page of tasks
// continues below: the cursor's, or past every task for the first page.
func belowCursor(cursor string) (uint64, error) {
	if cursor == "" {
		return math.MaxUint64, nil
	}
	seq, err := strconv.ParseUint(cursor, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("memory: bad cursor: %w", imagegen.ErrInvalidParams)
	}
	return seq, nil
}

// forgetOwnerTasks compacts owner's index once retention has removed
// its newest task (compactOwnerTasks: the entries of removed tasks go,
// and the index with them when none is left; an older task may be
// pending still); s.mu is held. Without it, an owner who made a few
// tasks and left kept its index for as long as the store ran
// (compactOwnerTasks ran only on appends at powers of two).
func (s *Store) forgetOwnerTasks(owner string) {
	ts := s.ownerTasks[owner]
	if len(ts) == 0 {
		return
	}
	if _, ok := s.lookup(ts[len(ts)-1]); !ok {
		s.compactOwnerTasks(owner)
	}
}

// compactOwnerTasks drops from owner's index the tasks that retention
// removed, and returns it; s.mu is held. Cursors are sequence numbers,
// so compaction does not move them.
func (s *Store) compactOwnerTasks(owner string) []taskSlot {
	ts := s.ownerTasks[owner]
	kept := ts[:0]
	for _, t := range ts {
		if _, ok := s.lookup(t); ok {
			kept = append(kept, t)
		}
	}
	if len(kept) == 0 {
		delete(s.ownerTasks, owner)
		return nil
	}
	s.ownerTasks[owner] = kept
	return kept
}
