package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/groupcommit"
	"github.com/imagegen/imagegen/store/storekit"
)

// CreateTask debits t.Cost and stores t as pending, atomically. Calls
// that arrive together share one statement and one commit (group
// commit: see createBatch); each is still charged and created on its own.
// Idle workers of other processes are told just after it commits.
func (s *Store) CreateTask(ctx context.Context, t *imagegen.Task, p imagegen.CreateParams) (int64, error) {
	req, err := newTaskRequest(t)
	if err != nil {
		return 0, err
	}
	res, err := s.creates.Do(ctx, createReq{task: t, request: string(req), maxPending: max(p.MaxPending, 0)})
	if err != nil {
		return 0, err
	}
	if err := createError(t, res); err != nil {
		return res.balance, err
	}
	t.Status, t.Attempt = imagegen.StatusPending, 0
	t.CreatedAt, t.UpdatedAt, t.RunAfter = res.at, res.at, res.at
	s.queuedNote.poke("")
	return res.balance, nil
}

// createError is the error of a submit_tasks code: nil for created.
func createError(t *imagegen.Task, res createRes) error {
	switch res.code {
	case 0:
		return imagegen.ErrInsufficientCredits
	case -1:
		return fmt.Errorf("postgres store: task %q exists: %w", t.ID, imagegen.ErrDuplicateEntry)
	case -2:
		return fmt.Errorf("postgres store: owner's pending tasks at the max: %w", imagegen.ErrQueueFull)
	}
	return nil
}

type createReq struct {
	task       *imagegen.Task
	request    string // JSON
	maxPending int
}

type createRes struct {
	code    int32 // 1 created, 0 balance short, -1 id taken, -2 queue full
	balance int64
	at      time.Time
}

type createCall = groupcommit.Call[createReq, createRes]

// createBatch creates a batch of tasks with one call of the submit_tasks
// function (submitBatch: a failure after it was sent is settled, so that
// no caller takes a task for never made that may still be). Tasks go in owner order (each owner's in submission order),
// so that concurrent batches lock accounts in one order; should a
// deadlock with a host app's transaction abort the batch anyway, or a
// task id of the batch be taken (a submit retried with its id: a run of
// several tasks inserts them without ON CONFLICT, migration 16, and
// raises unique_violation), or a task's row hold a value the database
// refuses (splitBatch), its tasks are created one by one instead, each
// with its own answer.
func (s *Store) createBatch(ctx context.Context, batch []*createCall) {
	sort.SliceStable(batch, func(i, j int) bool { return batch[i].Req.task.Owner < batch[j].Req.task.Owner })
	n := len(batch)
	ids, owners, reqs, models, callbacks, events := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	requestIDs := make([]string, n)
	costs := make([]int64, n)
	maxPending := make([]int32, n)
	for i, c := range batch {
		t := c.Req.task
		ids[i], owners[i], reqs[i], models[i], costs[i], callbacks[i] = t.ID, t.Owner, c.Req.request, t.Model, t.Cost, t.Request.CallbackURL
		events[i], requestIDs[i], maxPending[i] = storekit.EventsField(t.Request.CallbackEvents), t.RequestID, int32(c.Req.maxPending)
	}
	codes, balances, at, err := s.submitBatch(ctx, []any{s.nowArg(), ids, owners, reqs, models, costs, callbacks, events, requestIDs, maxPending})
	if err == nil && (len(codes) != n || len(balances) != n) {
		err = fmt.Errorf("create_tasks returned %d results for %d tasks", len(codes), n)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && splitBatch[pgErr.Code] && n > 1 {
		for _, c := range batch {
			s.createBatch(ctx, []*createCall{c})
		}
		return
	}
	if n == 1 && errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.ConstraintName == chargeRefTaken {
		// The task is gone (retention removed it) but its charge is in
		// the ledger: its id is taken, as a task's that exists.
		batch[0].Res = createRes{code: -1}
		return
	}
	for i, c := range batch {
		if err != nil {
			c.Err = s.wrapErr("create task", err)
			continue
		}
		c.Res = createRes{code: codes[i], balance: balances[i], at: at.UTC()}
	}
}

// chargeRefTaken is the ledger's unique (owner, ref) constraint, which a
// submit of an id whose task retention has removed violates with its
// charge ("task:<id>").
const chargeRefTaken = "ledger_owner_ref_key"

// splitBatch are the errors of a batch that its tasks are created one
// by one after: a deadlock or serialization failure; a task id taken;
// and a value one task's row cannot hold (22P05: U+0000 in a text or
// jsonb; 22021: a byte sequence invalid in the database's encoding),
// which fails that task alone, not every other owner's submit that
// shared its statement.
var splitBatch = map[string]bool{"40P01": true, "40001": true, "23505": true, "22P05": true, "22021": true}

// submitTasks runs submit_tasks on q with the batch's columns.
func (s *Store) submitTasks(ctx context.Context, q querier, ids, owners, reqs, models []string, costs []int64,
	callbacks, events, requestIDs []string, maxPending []int32) (codes []int32, balances []int64, at time.Time, err error) {
	err = q.QueryRow(ctx, s.sql(submitSQL), s.nowArg(), ids, owners, reqs, models, costs, callbacks, events, requestIDs, maxPending).Scan(&codes, &balances, &at)
	return codes, balances, at, err
}

// createTask creates t on q (a host's transaction), with the pending
// cap of p.
func (s *Store) createTask(ctx context.Context, q querier, t *imagegen.Task, p imagegen.CreateParams) (int64, error) {
	req, err := newTaskRequest(t)
	if err != nil {
		return 0, err
	}
	codes, balances, at, err := s.submitTasks(ctx, q, []string{t.ID}, []string{t.Owner}, []string{string(req)}, []string{t.Model},
		[]int64{t.Cost}, []string{t.Request.CallbackURL}, []string{storekit.EventsField(t.Request.CallbackEvents)},
		[]string{t.RequestID}, []int32{int32(max(p.MaxPending, 0))})
	if err == nil && (len(codes) != 1 || len(balances) != 1) {
		err = fmt.Errorf("submit_tasks returned %d results for 1 task", len(codes))
	}
	if err != nil {
		return 0, s.wrapErr("create task", err)
	}
	res := createRes{code: codes[0], balance: balances[0], at: at.UTC()}
	if err := createError(t, res); err != nil {
		return res.balance, err
	}
	t.Status, t.Attempt = imagegen.StatusPending, 0
	t.CreatedAt, t.UpdatedAt, t.RunAfter = res.at, res.at, res.at
	return res.balance, nil
}

// newTaskRequest checks a task to create (storekit.CheckNewTask) and
// returns its request as the JSON the tasks table keeps.
func newTaskRequest(t *imagegen.Task) ([]byte, error) {
	if err := storekit.CheckNewTask(t); err != nil {
		return nil, err
	}
	req, err := json.Marshal(t.Request)
	if err != nil {
		return nil, fmt.Errorf("postgres store: encode request: %w", err)
	}
	return req, nil
}

// taskColumns are the columns scanTask reads, in its order.
const taskColumns = `id, owner, request, model, cost, status, attempt, released, lease_until, run_after, images,
	error, error_code, last_error, refunded, request_id, created_at, updated_at, started_at, finished_at, expires_at, seq, progress`

// errRequest: a task's stored request does not decode into an
// imagegen.Request.
var errRequest = errors.New("request does not decode")

// scanTask reads one row of taskColumns. A row whose request does not
// decode is an error wrapping errRequest, returned with the task as read
// without it (its id, model and attempt), so that a claim can fail that
// one task rather than drop its batch.
func scanTask(row pgx.Row) (*imagegen.Task, int64, error) {
	var (
		t                          imagegen.Task
		req                        []byte
		status, code               string
		lease, started, finished   *time.Time
		expires                    *time.Time
		runAfter, created, updated time.Time
		seq                        int64
	)
	err := row.Scan(&t.ID, &t.Owner, &req, &t.Model, &t.Cost, &status, &t.Attempt, &t.Released, &lease, &runAfter, &t.Images,
		&t.Error, &code, &t.LastError, &t.Refunded, &t.RequestID, &created, &updated, &started, &finished, &expires, &seq, &t.Progress)
	if err != nil {
		return nil, 0, err
	}
	if len(t.Images) == 0 {
		t.Images = nil
	}
	t.Status, t.ErrorCode = imagegen.Status(status), imagegen.ErrorCode(code)
	t.LeaseUntil, t.StartedAt, t.FinishedAt, t.ExpiresAt = utc(lease), utc(started), utc(finished), utc(expires)
	t.RunAfter, t.CreatedAt, t.UpdatedAt = runAfter.UTC(), created.UTC(), updated.UTC()
	if err := json.Unmarshal(req, &t.Request); err != nil {
		// The rest of the row was read: a listing shows the task
		// (collectPage), every other caller drops it.
		t.Request = imagegen.Request{}
		return &t, seq, fmt.Errorf("postgres store: task %s: %w: %w", t.ID, errRequest, err)
	}
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
		return nil, s.wrapErr("task", err)
	}
	return t, nil
}

// inModelQueue says that task p is in its model's queue: pending, neither
// parked nor delayed. It is tasks_model_fair's predicate (migration 27)
// as the index spells it, so that the planner reads that index; the
// twin of backInQueue, which puts a task there.
const inModelQueue = `p.status = 'pending' AND NOT p.parked AND NOT p.delayed`

// pendingModels is a recursive CTE, queues(model), of the models with
// pending tasks in their queues (and a last row of NULL): a loose scan
// of tasks_model_fair, one probe per model (migration 20). The pending
// tasks are one queue per model there, in claim order, but for the
// parked ones (migration 26: tasks.parked, the tasks a claim set aside
// while their owners were at their caps), which tasks_parked_fair holds
// in claim order, and the delayed ones (migration 27: tasks.delayed, the
// retries a claim set aside while they wait out their delay), which
// tasks_delayed_fair holds in claim order; the claim order of them all
// is the merge of those queues.
const pendingModels = `queues(model) AS (
	(SELECT p.model FROM {schema}.tasks p WHERE ` + inModelQueue + ` ORDER BY p.model LIMIT 1)
	UNION ALL
	SELECT (SELECT p.model FROM {schema}.tasks p WHERE ` + inModelQueue + ` AND p.model > q.model
		ORDER BY p.model LIMIT 1)
	FROM queues q WHERE q.model IS NOT NULL)`

// queuePositionsSQL answers QueuePositions with one read of the queues
// up to the last of the ids in claim order, however many ids: the ids'
// pending tasks in claim order (asked) cut the queues into segments,
// each counted once in every model's queue (tasks_model_fair, one range
// of it a model) and among the parked and the delayed tasks
// (tasks_parked_fair, tasks_delayed_fair), and a task's position is the
// sum of the segments up to it. Counting every task ahead of each id on
// its own read the queues once an id: the full view of a page of 100
// pending tasks at the back of a long queue read it a hundred times.
const queuePositionsSQL = `WITH RECURSIVE ` + pendingModels + `,
	asked AS (SELECT DISTINCT t.tag, t.seq FROM {schema}.tasks t WHERE t.id = ANY($1::text[]) AND t.status = 'pending'),
	segments AS (SELECT tag, seq,
			coalesce(lag(tag) OVER w, -9223372036854775808) AS from_tag, coalesce(lag(seq) OVER w, -9223372036854775808) AS from_seq
		FROM asked WINDOW w AS (ORDER BY tag, seq)),
	counted AS (SELECT g.tag, g.seq,
			(SELECT coalesce(sum((SELECT count(*) FROM {schema}.tasks p
				WHERE ` + inModelQueue + ` AND p.model = q.model AND (p.tag, p.seq) >= (g.from_tag, g.from_seq) AND (p.tag, p.seq) < (g.tag, g.seq))), 0)
			FROM queues q WHERE q.model IS NOT NULL) + (SELECT count(*) FROM {schema}.tasks p
				WHERE p.status = 'pending' AND p.parked AND (p.tag, p.seq) >= (g.from_tag, g.from_seq) AND (p.tag, p.seq) < (g.tag, g.seq))
			+ (SELECT count(*) FROM {schema}.tasks p
				WHERE p.status = 'pending' AND p.delayed AND (p.tag, p.seq) >= (g.from_tag, g.from_seq) AND (p.tag, p.seq) < (g.tag, g.seq)) AS n
		FROM segments g),
	positions AS MATERIALIZED (SELECT tag, seq, sum(n) OVER (ORDER BY tag, seq) AS ahead FROM counted)
	SELECT i.ord, coalesce(p.ahead, -1)::bigint
	FROM unnest($1::text[]) WITH ORDINALITY AS i(id, ord)
	LEFT JOIN {schema}.tasks t ON t.id = i.id AND t.status = 'pending'
	LEFT JOIN positions p ON p.tag = t.tag AND p.seq = t.seq`

// QueuePositions returns how many pending tasks are ahead of each id in
// claim order (fair-share tag, then submission), or -1 for a task that
// is not pending: the sum over the models' queues of the tasks ahead of
// it in each, and of the parked and the delayed tasks ahead of it.
func (s *Store) QueuePositions(ctx context.Context, ids []string) ([]int, error) {
	out := make([]int, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	var b pgx.Batch
	b.Queue(noJITSQL)
	b.Queue(s.sql(queuePositionsSQL), ids)
	br := s.pool.SendBatch(ctx, &b)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return nil, s.wrapErr("queue positions", err)
	}
	rows, err := br.Query()
	if err != nil {
		return nil, s.wrapErr("queue positions", err)
	}
	defer rows.Close()
	for rows.Next() {
		var ord, pos int64
		if err := rows.Scan(&ord, &pos); err != nil {
			return nil, s.wrapErr("queue positions", err)
		}
		if i := int(ord) - 1; i >= 0 && i < len(out) {
			out[i] = int(pos)
		}
	}
	return out, s.wrapErr("queue positions", rows.Err())
}

// noJITSQL goes before queuePositionsSQL in the same round trip and
// implicit transaction (a pgx batch), so that the statement is planned
// without JIT compilation. The planner prices its per-model counts far
// above what they read (it cannot tell how few tasks lie between two
// tags), past jit_above_cost, and compiling then took most of its time:
// 20,000 tasks queued, the positions of 100 at the back took 0.52 s with
// JIT and 4 ms without; of one, 20 ms against 3 ms.
const noJITSQL = `SELECT set_config('jit', 'off', true)`
