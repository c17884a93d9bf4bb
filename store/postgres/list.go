package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/store/storekit"
)

// ListTasks returns a page of owner's tasks, newest first. The cursor is
// the submission sequence number of the last task of the previous page.
// A task whose stored request does not decode is listed with what could
// be read (id, owner, status, failure, times; its request zero), neither
// failing the page nor left out of it. With a status, a page reads at
// most storekit.ListScan(limit) of the owner's tasks (listFiltered).
func (s *Store) ListTasks(ctx context.Context, owner string, status imagegen.Status, limit int, cursor string) (imagegen.TaskPage, error) {
	below, err := belowCursor(cursor)
	if err != nil {
		return imagegen.TaskPage{}, err
	}
	limit = max(limit, 1)
	if status != "" {
		return s.listFiltered(ctx, owner, status, limit, below)
	}
	rows, err := s.pool.Query(ctx, s.sql(`SELECT `+taskColumns+` FROM {schema}.tasks
		WHERE owner = $2 AND seq < $3 AND `+visible+`
		ORDER BY seq DESC LIMIT $4`), s.nowArg(), owner, below, limit+1)
	if err != nil {
		return imagegen.TaskPage{}, s.wrapErr("list tasks", err)
	}
	return s.collectPage(rows, limit)
}

// listFiltered is ListTasks with a status: it reads the owner's newest
// storekit.ListScan(limit) tasks below the cursor (the index of owner
// and seq, then their rows, for their status; expired ones that
// retention has not removed yet count too) and lists those visible with
// the status. A status that matches fewer of them than the page holds
// gives a short page, even an empty one, whose Next is the last task
// read when the read stopped at its bound (a "cut" row, sent whether
// or not it has the status): else every page of a status that matches
// little (failed among thousands of successes) would read every task
// the owner keeps.
func (s *Store) listFiltered(ctx context.Context, owner string, status imagegen.Status, limit int, below int64) (imagegen.TaskPage, error) {
	scan := storekit.ListScan(limit)
	rows, err := s.pool.Query(ctx, s.sql(`WITH scanned AS MATERIALIZED (
			SELECT `+taskColumns+`, `+visible+` AS live FROM {schema}.tasks
			WHERE owner = $2 AND seq < $3
			ORDER BY seq DESC LIMIT $5),
		cut AS (SELECT min(seq) AS seq FROM scanned HAVING count(*) = $5)
		SELECT `+taskColumns+`, live AND status = $4 AS listed, seq = (SELECT seq FROM cut) AS cut FROM scanned
		WHERE (live AND status = $4) OR seq = (SELECT seq FROM cut)
		ORDER BY seq DESC LIMIT $6`), s.nowArg(), owner, below, string(status), scan, limit+2)
	if err != nil {
		return imagegen.TaskPage{}, s.wrapErr("list tasks", err)
	}
	defer rows.Close()
	var page imagegen.TaskPage
	var lastSeq int64
	for rows.Next() {
		var listed bool
		var cut *bool // NULL when the read did not reach its bound
		t, seq, err := scanTask(extraColumns{rows, []any{&listed, &cut}})
		if err != nil && !errors.Is(err, errRequest) { // listed as read (collectPage)
			return imagegen.TaskPage{}, s.wrapErr("list tasks", err)
		}
		if listed {
			if len(page.Tasks) == limit {
				page.Next = strconv.FormatInt(lastSeq, 10)
				break
			}
			page.Tasks = append(page.Tasks, t)
			lastSeq = seq
		}
		if cut != nil && *cut {
			page.Next = strconv.FormatInt(seq, 10) // the page goes on below the last task read
		}
	}
	return page, s.wrapErr("list tasks", rows.Err())
}

// extraColumns reads a row of taskColumns followed by more columns,
// into extra, for scanTask.
type extraColumns struct {
	pgx.Row
	extra []any
}

func (r extraColumns) Scan(dest ...any) error {
	return r.Row.Scan(append(dest, r.extra...)...)
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
