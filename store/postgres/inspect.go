package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/store/storekit"
)

// QueueStats counts pending and processing tasks (from the queue's
// partial indexes) and measures the wait of the oldest ready one.
func (s *Store) QueueStats(ctx context.Context) (imagegen.QueueStats, error) {
	var st imagegen.QueueStats
	var oldest int64
	err := s.pool.QueryRow(ctx, s.sql(`SELECT
			(SELECT count(*) FROM {schema}.tasks WHERE status = 'pending'),
			(SELECT count(*) FROM {schema}.tasks WHERE status = 'processing'),
			coalesce((SELECT (extract(epoch FROM {now} - min(run_after)) * 1000000)::bigint FROM {schema}.tasks
				WHERE status = 'pending' AND run_after <= {now}), 0)`), s.nowArg()).Scan(&st.Pending, &st.Processing, &oldest)
	if err != nil {
		return st, s.wrapErr("queue stats", err)
	}
	st.OldestPending = time.Duration(oldest) * time.Microsecond
	return st, nil
}

// TaskByID returns any owner's task.
func (s *Store) TaskByID(ctx context.Context, id string) (*imagegen.Task, error) {
	t, _, err := scanTask(s.pool.QueryRow(ctx, s.sql(`SELECT `+taskColumns+` FROM {schema}.tasks
		WHERE id = $2 AND `+visible), s.nowArg(), id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, imagegen.ErrTaskNotFound
	}
	if err != nil {
		return nil, s.wrapErr("task", err)
	}
	return t, nil
}

// ListAllTasks returns a page of the tasks matching f, every owner's
// unless f.Owner is set, newest first; the cursor is a submission
// sequence number, as in ListTasks.
func (s *Store) ListAllTasks(ctx context.Context, f imagegen.TaskFilter, limit int, cursor string) (imagegen.TaskPage, error) {
	below, err := belowCursor(cursor)
	if err != nil {
		return imagegen.TaskPage{}, err
	}
	var since, until *time.Time
	if !f.Since.IsZero() {
		since = &f.Since
	}
	if !f.Until.IsZero() {
		until = &f.Until
	}
	limit = max(limit, 1)
	rows, err := s.pool.Query(ctx, s.sql(`SELECT `+taskColumns+` FROM {schema}.tasks
		WHERE seq < $2 AND ($3 = '' OR owner = $3) AND ($4 = '' OR status = $4)
			AND ($5::timestamptz IS NULL OR created_at >= $5) AND ($6::timestamptz IS NULL OR created_at < $6)
			AND `+visible+`
		ORDER BY seq DESC LIMIT $7`), s.nowArg(), below, f.Owner, string(f.Status), since, until, limit+1)
	if err != nil {
		return imagegen.TaskPage{}, s.wrapErr("list all tasks", err)
	}
	return s.collectPage(rows, limit)
}

// collectPage reads up to limit tasks of rows (which may hold one more,
// meaning there is a next page, whose cursor is the last task's seq).
func (s *Store) collectPage(rows pgx.Rows, limit int) (imagegen.TaskPage, error) {
	defer rows.Close()
	var page imagegen.TaskPage
	var lastSeq int64
	for rows.Next() {
		t, seq, err := scanTask(rows)
		// A task whose request does not decode is listed as far as it
		// could be read (its request zero), not an error for the whole
		// page: the owner can page past it, and sees it failed once a
		// claim has failed it.
		if err != nil && !errors.Is(err, errRequest) {
			return imagegen.TaskPage{}, s.wrapErr("list tasks", err)
		}
		if len(page.Tasks) == limit {
			page.Next = strconv.FormatInt(lastSeq, 10)
			break
		}
		page.Tasks = append(page.Tasks, t)
		lastSeq = seq
	}
	return page, s.wrapErr("list tasks", rows.Err())
}

// RequeueTask gives a failed task back to the queue, ready now, in one
// transaction: with recharge its cost is debited again (RechargeRef) and
// a later failure refunds it again (RerefundRef); without, a later
// failure refunds nothing. A recharge of a task never refunded (its
// owner's cancel kept its started charge) is refused, decided on the
// row as read under its lock, so no check made before can be outrun.
func (s *Store) RequeueTask(ctx context.Context, id string, recharge bool) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return s.wrapErr("requeue", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var owner, status string
	var cost int64
	var attempt int
	var refunded bool
	err = tx.QueryRow(ctx, s.sql(`SELECT owner, status, cost, attempt, refunded FROM {schema}.tasks
		WHERE id = $2 AND `+visible+` FOR UPDATE`), s.nowArg(), id).Scan(&owner, &status, &cost, &attempt, &refunded)
	if errors.Is(err, pgx.ErrNoRows) {
		return imagegen.ErrTaskNotFound
	}
	if err != nil {
		return s.wrapErr("requeue", err)
	}
	if imagegen.Status(status) != imagegen.StatusFailed {
		return fmt.Errorf("postgres store: requeue %s task: %w", status, imagegen.ErrInvalidTransition)
	}
	if recharge && !refunded {
		return fmt.Errorf("postgres store: requeue %s: recharge of a task never refunded: %w", id, imagegen.ErrDuplicateEntry)
	}
	refundRef := ""
	if recharge {
		var code int
		err := tx.QueryRow(ctx, s.sql(`SELECT code FROM {schema}.add_entry($2, 'charge', $3, $4, {now})`),
			s.nowArg(), owner, -cost, imagegen.RechargeRef(id, attempt)).Scan(&code)
		switch {
		case err != nil:
			return s.wrapErr("requeue", err)
		case code == 0:
			return imagegen.ErrInsufficientCredits
		case code < 0:
			return fmt.Errorf("postgres store: requeue %s: recharge %w", id, imagegen.ErrDuplicateEntry)
		}
		refundRef = imagegen.RerefundRef(id, attempt)
	}
	if _, err := tx.Exec(ctx, s.sql(`UPDATE {schema}.tasks
		SET `+backInQueue+`, error = '', error_code = '', lease_until = NULL, finished_at = NULL, expires_at = NULL,
			run_after = {now}, updated_at = {now}, `+queuedTag+`,
			refunded = CASE WHEN $3 THEN false ELSE refunded END,
			refund_ref = CASE WHEN $3 THEN $4 ELSE refund_ref END
		WHERE id = $2`), s.nowArg(), id, recharge, refundRef); err != nil {
		return s.wrapErr("requeue", err)
	}
	// Its deliveries still queued are dropped: its next ending queues its
	// own, due then, with no attempts (the insert keeps a row it finds).
	if _, err := tx.Exec(ctx, s.sql(`DELETE FROM {schema}.webhooks WHERE id = ANY($1)`),
		storekit.TaskWebhookIDs(id)); err != nil {
		return s.wrapErr("requeue", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return s.wrapErr("requeue", err)
	}
	s.queuedNote.poke("")
	return nil
}

// PurgeExpired removes at once what retention has made invisible (see
// Sweep) and returns how many tasks it removed.
func (s *Store) PurgeExpired(ctx context.Context) (int, error) {
	swept, err := s.Sweep(ctx)
	return int(swept.Tasks), err
}
