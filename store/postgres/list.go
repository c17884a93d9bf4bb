package postgres

import (
	"context"
	"fmt"
	"math"
	"strconv"

	"github.com/imagegen/imagegen"
)

// ListTasks returns a page of owner's tasks, newest first. The cursor is
// the submission sequence number of the last task of the previous page.
// A task whose stored request does not decode is listed with what could
// be read (id, owner, status, failure, times; its request zero), neither
// failing the page nor left out of it.
func (s *Store) ListTasks(ctx context.Context, owner string, status imagegen.Status, limit int, cursor string) (imagegen.TaskPage, error) {
	below, err := belowCursor(cursor)
	if err != nil {
		return imagegen.TaskPage{}, err
	}
	limit = max(limit, 1)
	rows, err := s.pool.Query(ctx, s.sql(`SELECT `+taskColumns+` FROM {schema}.tasks
		WHERE owner = $2 AND seq < $3 AND ($4 = '' OR status = $4) AND `+visible+`
		ORDER BY seq DESC LIMIT $5`), s.nowArg(), owner, below, string(status), limit+1)
	if err != nil {
		return imagegen.TaskPage{}, s.wrapErr("list tasks", err)
	}
	return s.collectPage(rows, limit)
}

// belowCursor returns the submission sequence number a page of tasks
// continues below: the cursor's, or past every task for the first page.
func belowCursor(cursor string) (int64, error) {
	if cursor == "" {
		return math.MaxInt64, nil
	}
	n, err := strconv.ParseInt(cursor, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("postgres store: bad cursor: %w", imagegen.ErrInvalidParams)
	}
	return n, nil
}
