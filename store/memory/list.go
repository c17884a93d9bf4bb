package memory

import (
	"context"
	"fmt"
	"math"
	"strconv"

	"github.com/imagegen/imagegen"
)

// ListTasks returns a page of owner's tasks, newest first. The cursor is
// the position in the owner's submission order to continue below.
func (s *Store) ListTasks(_ context.Context, owner string, status imagegen.Status, limit int, cursor string) (imagegen.TaskPage, error) {
	s.lock()
	defer s.mu.Unlock()
	kept := s.compactOwnerTasks(owner)
	below, err := belowCursor(cursor)
	if err != nil {
		return imagegen.TaskPage{}, err
	}
	start := len(kept) - 1
	for start >= 0 && kept[start].seq >= below {
		start--
	}
	var page imagegen.TaskPage
	var last uint64 // the seq of the page's last task
	for i := start; i >= 0; i-- {
		r := s.recs.at(kept[i].slot)
		if status != "" && r.status.name() != status {
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
