package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/imagegen/imagegen"
)

// createSQL debits the cost, appends the charge and inserts the task in
// one statement; it returns no row when the balance is short.
//
//	$1 now  $2 id  $3 owner  $4 request  $5 model  $6 cost  $7 callback URL
const createSQL = `
WITH debit AS (
	UPDATE {schema}.accounts SET balance = balance - $6::bigint
	WHERE owner = $3 AND balance >= $6
	RETURNING balance
), charge AS (
	INSERT INTO {schema}.ledger (owner, kind, amount, ref, at)
	SELECT $3::text, 'charge', -$6::bigint, 'task:' || $2::text, {now} FROM debit
), task AS (
	INSERT INTO {schema}.tasks (id, owner, request, model, cost, status, run_after, callback_url, created_at, updated_at)
	SELECT $2::text, $3::text, $4::jsonb, $5::text, $6::bigint, 'pending', {now}, $7::text, {now}, {now} FROM debit
	RETURNING created_at
)
SELECT debit.balance, task.created_at FROM debit, task`

// CreateTask debits t.Cost and stores t as pending, atomically. Idle
// workers of other processes are told just after it commits.
func (s *Store) CreateTask(ctx context.Context, t *imagegen.Task) (int64, error) {
	b, err := s.createTask(ctx, s.pool, t)
	if err == nil {
		s.notify.poke()
	}
	return b, err
}

// createTask runs createSQL on q (the pool or a transaction).
func (s *Store) createTask(ctx context.Context, q querier, t *imagegen.Task) (int64, error) {
	if err := imagegen.CheckNewTask(t); err != nil {
		return 0, err
	}
	req, err := json.Marshal(t.Request)
	if err != nil {
		return 0, fmt.Errorf("postgres store: encode request: %w", err)
	}
	var balance int64
	var created time.Time
	err = q.QueryRow(ctx, s.sql(createSQL), s.nowArg(), t.ID, t.Owner, req, t.Model, t.Cost, t.Request.CallbackURL).Scan(&balance, &created)
	if errors.Is(err, pgx.ErrNoRows) {
		b, err := s.balance(ctx, q, t.Owner)
		if err != nil {
			return 0, err
		}
		return b, imagegen.ErrInsufficientCredits
	}
	if err != nil {
		return 0, wrapErr("create task", err)
	}
	created = created.UTC()
	t.Status, t.Attempt = imagegen.StatusPending, 0
	t.CreatedAt, t.UpdatedAt, t.RunAfter = created, created, created
	return balance, nil
}

// taskColumns are the columns scanTask reads, in its order.
const taskColumns = `id, owner, request, model, cost, status, attempt, lease_until, run_after, images,
	error, error_code, last_error, refunded, created_at, updated_at, finished_at, expires_at, seq`

// scanTask reads one row of taskColumns.
func scanTask(row pgx.Row) (*imagegen.Task, int64, error) {
	var (
		t                          imagegen.Task
		req                        []byte
		status, code               string
		lease, finished, expires   *time.Time
		runAfter, created, updated time.Time
		seq                        int64
	)
	err := row.Scan(&t.ID, &t.Owner, &req, &t.Model, &t.Cost, &status, &t.Attempt, &lease, &runAfter, &t.Images,
		&t.Error, &code, &t.LastError, &t.Refunded, &created, &updated, &finished, &expires, &seq)
	if err != nil {
		return nil, 0, err
	}
	if err := json.Unmarshal(req, &t.Request); err != nil {
		return nil, 0, fmt.Errorf("postgres store: task %s: request: %w", t.ID, err)
	}
	if len(t.Images) == 0 {
		t.Images = nil
	}
	t.Status, t.ErrorCode = imagegen.Status(status), imagegen.ErrorCode(code)
	t.LeaseUntil, t.FinishedAt, t.ExpiresAt = utc(lease), utc(finished), utc(expires)
	t.RunAfter, t.CreatedAt, t.UpdatedAt = runAfter.UTC(), created.UTC(), updated.UTC()
	return &t, seq, nil
}

func utc(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

// visible is the condition of a task or record that retention has not
// yet removed.
const visible = `(expires_at IS NULL OR expires_at > {now})`

// Task returns owner's task.
func (s *Store) Task(ctx context.Context, owner, id string) (*imagegen.Task, error) {
	t, _, err := scanTask(s.pool.QueryRow(ctx, s.sql(`SELECT `+taskColumns+` FROM {schema}.tasks
		WHERE id = $2 AND owner = $3 AND `+visible), s.nowArg(), id, owner))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, imagegen.ErrTaskNotFound
	}
	if err != nil {
		return nil, wrapErr("task", err)
	}
	return t, nil
}
