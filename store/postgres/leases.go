package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/store/internal/leases"
	"github.com/imagegen/imagegen/store/storekit"
)

// maxClaim bounds how many tasks one claim takes.
const maxClaim = 64

// claimSQL leases up to $3 ready pending tasks in fair-share order
// (lowest tag first): the claim_tasks function (migrations 8, 12, 20,
// 21, 24, 25, 26 and 27). SKIP LOCKED lets concurrent claims pass each other's rows
// instead of waiting; caps are kept by transaction-scoped advisory
// locks, taken only when a cap applies.
//
// Since migration 20 the pending tasks are one queue per model
// (tasks_model_fair: model, tag, seq), and a claim merges the heads of
// those queues in (tag, seq) order, the one global order of before. The
// models with pending tasks, and each one's head, come from a loose scan
// of the index (one probe per model), and the merge keeps them in the
// order of their next tasks (a binary search to put one back in its
// place; until migration 21 a pass over every model for each). A model
// is looked at once per claim, when its next task might be the next to
// take: paused, at its cap (its advisory lock held by another claim, or
// as many running as the cap) or with its rate's next start in the
// future, it is dropped then, none of its tasks read; otherwise its
// queue is read through a cursor of its own, a row at a time as the
// merge needs it, and the model drops out once the claim has filled its
// cap or pushed its rate's next start past now. Tasks passed over for
// other reasons (not ready, their owner at the owner cap, decided as
// each is about to be taken until the claim finds the owner at its cap,
// its tasks then passed over without counting again: since migration 25
// by the scan's own filter, the model's cursor opened again without
// them, so they are neither locked nor handed to the function's loop)
// count against $4 per model: a model that would pass over one more than $4 drops out of
// this claim (until migration 21, one at the $4-th).
//
// Since migration 26 the tasks of an owner found at its cap (or parked
// in the model and not merged) are parked as the claim meets them, at
// most 1024 of a model's queue a claim: out of tasks_model_fair, into
// the owner's parked queue of the model (tasks.parked, parked_owners),
// which later claims do not read while the owner stays at its cap. Each
// claim looks at up to 64 parked owners of each model and merges the
// parked queues of those with a free slot (all, with no owner cap) with
// the models' queues, sharing the model's cap and rate (see the
// migration and docs/scheduling.md).
//
// Since migration 27 a task of a model's queue that is not ready (a
// retry waiting out its delay) is set aside as the claim meets it,
// uncounted against $4, at most 1024 of a queue a claim: out of
// tasks_model_fair, into its model's delayed retries (tasks.delayed,
// tasks_delayed by model and run_after), and each claim first gives
// back to their queues, with their tags, those now due (at most 1024 a
// model; the undelay function): so retries waiting at the head of a
// model's queue, however many, hold back none of its other tasks
// (storetest's DelayedRetriesHoldNoOneBack). Rows locked by a
// concurrent claim are skipped unseen (SKIP LOCKED), so they count
// against nothing, but they are bounded by what the concurrent claims
// lock. A claim's work is so bounded by its batch plus $4 per model with
// pending tasks, however long a held model's backlog: a held model holds
// no other model's tasks back. Until migration 20 the claim walked one
// queue of every model's tasks and passed over at most $4 in all, so a
// capped or rate-limited model with more than $4 tasks at the head of
// the queue left every worker idle (storetest's
// CappedModelHoldsNoOneBack, RatedModelHoldsNoOneBack). A claim that
// compares several models' heads may leave the head of a model it did
// not take from locked until it commits (one row per such model): a
// concurrent claim passes over it, as over the rows a claim passes over.
// A model with a rate whose models row another claim holds is passed
// over too, without waiting for that claim to commit (until migration 21
// the claim's insert of the row waited, and two claims that came to two
// rated models in opposite orders deadlocked).
//
// The owner cap's count reads the owner's running tasks alone, through
// tasks_owner_running (owner, processing tasks only; migration 22).
// Until then the planner could count through tasks_owner, every task
// of the owner's, finished ones kept for the retention included, when
// the statistics made it look cheap (taken while many owners' tasks ran,
// or before an owner's history grew): a claim of an owner with 20,000
// finished tasks read 160,000 rows and index entries, against 82 with
// none (TestOwnerCapCountIgnoresFinishedTasks). The index costs every claim
// (claim_free's too) one more index entry per task taken, and a lease
// renewal one; those updates were already not HOT (tasks_leases).
//
// A claim commits without waiting for its WAL flush (synchronous_commit
// off, for this transaction only): the worker's loop claims one batch at
// a time, so a flush per claim would cap the whole pipeline at one batch
// per disk flush. This is safe: a claim lost to a database crash leaves
// the task as it was before, pending (or under the previous lease), and
// the fencing token then refuses the worker's finish, so the task runs
// again; submits, finishes and refunds still wait for their flush.
//
//	$1 now  $2 lease (µs)  $3 how many  $4 how many to pass over, per model  $5 owner cap
//	$6 models with a cap or rate  $7 their caps  $8 their rates (0: none)
const claimSQL = `SELECT ` + taskColumns + ` FROM {schema}.claim_tasks({now}, $2 * interval '1 microsecond',
	$3, $4, $5, $6, $7, $8)`

// claimFreeSQL is claimSQL for a claim without caps or rates, the common
// case: the claim_free function (migrations 14, 17, 20, 21, 26 and 27;
// since 26 it hands the claim to claim_tasks, with no owner cap, while
// some owner is parked; since 27 it sets aside the tasks not ready it
// meets, as claim_tasks does, instead of passing over $4 of them)
// merges the models' queues in fair order as claim_tasks does, dropping
// paused models unread (and, until 27, passing over at most $4 tasks
// not yet ready per model), without claim_tasks' row-by-row checks, and claims what it
// took in one UPDATE; with one model (not paused) it walks that model's
// queue alone. (Until migration 20 it walked one queue of every model's
// tasks, filtering out paused models' tasks and tasks not ready without
// bound: its work grew with a paused model's backlog.) It now locks the
// tasks not ready that it passes over, as claim_tasks always did. Like
// claim_tasks, it notes the tasks that leave pending for the pending cap
// itself, one row of pending_moves per owner (migration 12), with
// imagegen.moves_noted set so that the status trigger passes over them.
//
// Version 13 did this in one statement, SELECT ... ORDER BY tag, seq
// LIMIT $3 FOR UPDATE SKIP LOCKED, whose plan depended on the
// statistics: on a young table, or one analyzed while the queue was
// idle, PostgreSQL expected a handful of pending tasks and read and
// sorted all of them (bench pipeline, 3000 tasks: 8 of 382 claims, 6 ms
// each against 0.45 ms in order). Its cached generic plan, which cannot
// know the limit, was worse still (a tenth of the pending tasks joined
// back by a sequential scan: 11 ms for 8 of 20,000), so PostgreSQL
// planned it afresh at every execution, about half of a claim's server
// CPU. claim_free reads the queue through a cursor, which PostgreSQL
// plans for its first rows, so in order whatever the statistics
// (TestClaimWalksTheQueueInOrder), and the call's own plan is trivial
// and kept. Server CPU a task claimed, 8 at a time from 20,000 pending
// in one session: 104 and 108 us before, 44 and 47 us now.
//
// Version 17 cut what a claim costs whatever its size (with an instant
// model claims take 11 tasks on average): the function's statements keep
// one generic plan, paused models are read once, the UPDATE takes the
// locked rows by ctid and processing callbacks have a statement of their
// own, run only when wanted (TestClaimUpdatesTheRowsItLocked).
//
//	$1 now  $2 lease (µs)  $3 how many  $4 how many to pass over, per model
const claimFreeSQL = `SELECT ` + taskColumns + ` FROM {schema}.claim_free({now}, $2 * interval '1 microsecond', $3, $4)`

// ClaimTask leases the next ready pending task in fair-share order.
func (s *Store) ClaimTask(ctx context.Context, lease time.Duration) (*imagegen.Task, error) {
	return leases.First(s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: lease, N: 1}))
}

// ClaimTasks leases up to p.N ready pending tasks in fair-share order,
// passing over those that p.Limits holds back, in one statement.
//
// The statement has leased every row it returns, so a row whose request
// does not decode (corrupted, or written by something else) does not
// cost the others their claim, which dropping the batch did (they stayed
// leased to no one until their leases ran out, an attempt used up each
// time the bad row came back with them): the tasks it could read are
// returned, with an *imagegen.UnreadableTasksError for that one, which is
// failed (CodeInternal) and refunded at once through FailTask
// (storekit.FailUnreadable) rather than left to its lease: its data will
// not mend itself. A row that does not scan at all still fails the claim
// (pgx ends the rows with it).
func (s *Store) ClaimTasks(ctx context.Context, p imagegen.ClaimParams) ([]*imagegen.Task, error) {
	n := min(max(p.N, 1), maxClaim)
	var rows pgx.Rows
	var err error
	if p.Limits.Zero() {
		rows, err = s.pool.Query(ctx, s.sql(claimFreeSQL), s.nowArg(), micros(p.Lease), n, imagegen.ClaimScan)
	} else {
		models, caps, rates := modelLimits(p.Limits)
		rows, err = s.pool.Query(ctx, s.sql(claimSQL), s.nowArg(), micros(p.Lease), n, imagegen.ClaimScan,
			p.Limits.OwnerConcurrency, models, caps, rates)
	}
	if err != nil {
		return nil, s.wrapErr("claim", err)
	}
	var out []*imagegen.Task
	var unreadable []imagegen.UnreadableTask
	for rows.Next() {
		t, _, err := scanTask(rows)
		if errors.Is(err, errRequest) { // leased all the same: failed below, not dropped with the batch
			unreadable = append(unreadable, imagegen.UnreadableTask{ID: t.ID, Model: t.Model, Attempt: t.Attempt, Err: err})
			continue
		}
		if err != nil {
			rows.Close()
			return nil, s.wrapErr("claim", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrapErr("claim", err)
	}
	if err := storekit.FailUnreadable(ctx, s.FailTask, unreadable); err != nil {
		return out, err
	}
	if len(out) == 0 {
		return nil, imagegen.ErrNoTask
	}
	return out, nil
}

// modelLimits lists the models l caps or rates, with each one's cap and
// rate (0 for none), as claim_tasks takes them.
func modelLimits(l imagegen.Limits) (models []string, caps, rates []int32) {
	for model, c := range l.ModelConcurrency {
		models, caps, rates = append(models, model), append(caps, int32(c)), append(rates, int32(l.ModelRate[model]))
	}
	for model, r := range l.ModelRate {
		if _, ok := l.ModelConcurrency[model]; !ok {
			models, caps, rates = append(models, model), append(caps, 0), append(rates, int32(r))
		}
	}
	return models, caps, rates
}

// holds is the fencing condition: attempt $3 holds task $2's lease.
const holds = `id = $2 AND status = 'processing' AND attempt = $3`

// RenewLease extends the lease of the holder of attempt while it runs.
// A lease that has ended (lease_until <= now) is not renewed
// (ErrLeaseLost): its task no longer counts against the caps, which
// count lease_until > now, and another task may have taken its slot.
func (s *Store) RenewLease(ctx context.Context, id string, attempt int, lease time.Duration) error {
	tag, err := s.pool.Exec(ctx, s.sql(`UPDATE {schema}.tasks
		SET lease_until = {now} + $4 * interval '1 microsecond', updated_at = {now}
		WHERE `+holds+` AND lease_until > {now}`), s.nowArg(), id, attempt, micros(lease))
	return s.holderResult(id, attempt, tag, err)
}

// SetProgress records the generation's progress on the task attempt
// holds.
func (s *Store) SetProgress(ctx context.Context, id string, attempt int, progress float64) error {
	tag, err := s.pool.Exec(ctx, s.sql(`UPDATE {schema}.tasks SET progress = $3
		WHERE id = $1 AND status = 'processing' AND attempt = $2`), id, attempt, progress)
	return s.holderResult(id, attempt, tag, err)
}

// backInQueue is the SET clause that gives a task back to the pending
// tasks in its model's queue (tasks_model_fair): pending, and neither
// parked at its owner's cap (migration 26) nor set aside as a delayed
// retry (migration 27), whichever it was when it left the queue.
// Retries, releases, recoveries and requeues all write it. (A delayed
// flag left behind would heal by itself: the next claim gives back
// every delayed task whose run_after has passed.)
const backInQueue = `status = 'pending', parked = false, delayed = false`

// queuedTag is the SET clause that tags a task given back to the queue
// (the retries, releases, recoveries and requeues that write
// backInQueue): after its owner's last pending task (next_tag), from
// its model's base (model_base, migration 28), as submit_tasks tags a
// new task. The base is the store's virtual time (vtime), unless the
// head of the model's queue is behind it (the model held back while
// others ran: paused, at its cap, waiting for its rate), when it is one
// less than the head's tag (storekit.QueueBase), so the task waits
// behind one turn of the model's backlog, not all of it.
const queuedTag = `tag = {schema}.next_tag(owner, {schema}.model_base(model, {schema}.vtime({now})))`

// RetryTask gives the task back to the queue, ready after delay.
func (s *Store) RetryTask(ctx context.Context, id string, attempt int, delay time.Duration, lastErr string) error {
	tag, err := s.pool.Exec(ctx, s.sql(`UPDATE {schema}.tasks
		SET `+backInQueue+`, lease_until = NULL, run_after = {now} + $4 * interval '1 microsecond',
			updated_at = {now}, last_error = $5, `+queuedTag+`
		WHERE `+holds), s.nowArg(), id, attempt, micros(delay), lastErr)
	if err == nil && tag.RowsAffected() == 1 && delay <= time.Second {
		s.queuedNote.poke("")
	}
	return s.holderResult(id, attempt, tag, err)
}

// ReleaseTask gives the task back to the queue, ready now, without
// counting the attempt (its Released count grows by one).
func (s *Store) ReleaseTask(ctx context.Context, id string, attempt int) error {
	tag, err := s.pool.Exec(ctx, s.sql(`UPDATE {schema}.tasks
		SET `+backInQueue+`, lease_until = NULL, run_after = {now}, updated_at = {now},
			released = released + 1, last_error = $4, `+queuedTag+`
		WHERE `+holds), s.nowArg(), id, attempt, storekit.ReleasedMessage)
	if err == nil && tag.RowsAffected() == 1 {
		s.queuedNote.poke("")
	}
	return s.holderResult(id, attempt, tag, err)
}

// holderResult turns the outcome of a fenced statement into nil,
// ErrLeaseLost (no row changed) or the error.
func (s *Store) holderResult(id string, attempt int, tag pgconn.CommandTag, err error) error {
	return s.fenced(id, attempt, tag.RowsAffected() > 0, err)
}

// recoverBatch is how many expired leases one recovery transaction takes.
const recoverBatch = 100

// RecoverExpired sends tasks whose lease ended back to pending, or fails
// and refunds them after maxAttempts (claims given back by ReleaseTask
// do not count), a batch per transaction (the rows
// locked with SKIP LOCKED, so concurrent recoveries split the work), and
// reports them. It also sweeps expired records now and then (see Sweep).
func (s *Store) RecoverExpired(ctx context.Context, maxAttempts int) (imagegen.Recovery, error) {
	var rec imagegen.Recovery
	for {
		n, err := s.recoverBatch(ctx, maxAttempts, &rec)
		if err != nil {
			return rec, err
		}
		if n < recoverBatch {
			break
		}
	}
	if rec.Moved() > 0 {
		s.queuedNote.poke("")
	}
	s.maybeSweep(ctx)
	return rec, nil
}

// recoverBatch recovers up to recoverBatch expired leases in one
// transaction, adds what it did to rec once committed, and returns how
// many it moved.
func (s *Store) recoverBatch(ctx context.Context, maxAttempts int, rec *imagegen.Recovery) (int, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, s.wrapErr("recover", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	rows, err := tx.Query(ctx, s.sql(`SELECT id, attempt - released, owner, model, request_id, cost, refunded
		FROM {schema}.tasks
		WHERE status = 'processing' AND lease_until <= {now}
		ORDER BY lease_until LIMIT $2 FOR UPDATE SKIP LOCKED`), s.nowArg(), recoverBatch)
	if err != nil {
		return 0, s.wrapErr("recover", err)
	}
	var requeue, failIDs, failMsgs []string
	var failed []imagegen.ExpiredTask
	for rows.Next() {
		var t imagegen.ExpiredTask // Attempts: attempts, less the claims given back
		var refunded bool
		if err := rows.Scan(&t.ID, &t.Attempts, &t.Owner, &t.Model, &t.RequestID, &t.Cost, &refunded); err != nil {
			rows.Close()
			return 0, s.wrapErr("recover", err)
		}
		if t.Attempts < maxAttempts {
			requeue = append(requeue, t.ID)
			continue
		}
		if !refunded { // the row is locked: fail_locked refunds it now
			t.Refund = t.Cost
		}
		failed = append(failed, t)
		failIDs = append(failIDs, t.ID)
		failMsgs = append(failMsgs, storekit.ExpiredLeaseMessage(t.Attempts))
	}
	if err := rows.Err(); err != nil {
		return 0, s.wrapErr("recover", err)
	}
	n := len(requeue) + len(failed)
	if n == 0 {
		return 0, nil
	}
	if len(requeue) > 0 {
		if err := s.requeueExpired(ctx, tx, requeue); err != nil {
			return 0, s.wrapErr("recover", err)
		}
	}
	if len(failIDs) > 0 {
		if failed, err = s.failExpired(ctx, tx, failed, failIDs, failMsgs); err != nil {
			return 0, s.wrapErr("recover", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, s.wrapErr("recover", err)
	}
	rec.Requeued += len(requeue)
	rec.Failed = append(rec.Failed, failed...)
	return n, nil
}

// requeueExpiredSQL sends one task whose lease ended back to the queue,
// at the end of its owner's line.
const requeueExpiredSQL = `UPDATE {schema}.tasks
	SET ` + backInQueue + `, lease_until = NULL, run_after = {now}, updated_at = {now},
		last_error = 'lease expired',
		` + queuedTag + `
	WHERE id = $2`

// requeueExpired sends the locked tasks ids back to the queue in tx, in
// order, one statement each (sent together, in one round trip): each
// statement sees the tasks the ones before it queued, so that each task
// is tagged after its owner's last, as a release or a retry would tag it.
// One UPDATE of them all read every task's tag from the snapshot before
// any was queued: an owner's tasks recovered together shared one tag,
// and all ran before another owner's next task.
func (s *Store) requeueExpired(ctx context.Context, tx pgx.Tx, ids []string) error {
	var b pgx.Batch
	for _, id := range ids {
		b.Queue(s.sql(requeueExpiredSQL), s.nowArg(), id)
	}
	return tx.SendBatch(ctx, &b).Close()
}

// unrefundableRetry is how much longer recovery leaves the lease of a
// task it could not fail (its refund refused: the owner's balance would
// overflow), so that it is tried again later, behind the other leases.
const unrefundableRetry = time.Minute

// failExpired fails and refunds the locked tasks ids (failed, in
// order) in tx with one statement. Should the database refuse that
// statement (a refund that would take its owner's balance past the
// largest bigint raises numeric_value_out_of_range), the tasks are
// failed one by one, each in a savepoint of its own: one that is still
// refused is left processing, nothing credited, its lease
// unrefundableRetry longer, and the others are failed, so that one
// owner's account never holds back another's expired leases. It returns
// the tasks failed.
func (s *Store) failExpired(ctx context.Context, tx pgx.Tx, failed []imagegen.ExpiredTask, ids, msgs []string) ([]imagegen.ExpiredTask, error) {
	const failSQL = `SELECT {schema}.fail_locked(f.id, $4, f.msg, {now}, $5 * interval '1 microsecond', $6)
		FROM unnest($2::text[], $3::text[]) AS f(id, msg)`
	fail := func(ids, msgs []string) error {
		return pgx.BeginFunc(ctx, tx, func(sp pgx.Tx) error { // a savepoint
			_, err := sp.Exec(ctx, s.sql(failSQL), s.nowArg(), ids, msgs, string(imagegen.CodeInternal), micros(s.retention), s.finished)
			return err
		})
	}
	err := fail(ids, msgs)
	var pgErr *pgconn.PgError
	if err == nil || !errors.As(err, &pgErr) {
		return failed, err
	}
	var out []imagegen.ExpiredTask
	for i, t := range failed {
		err := fail(ids[i:i+1], msgs[i:i+1])
		if err == nil {
			out = append(out, t)
			continue
		}
		if !errors.As(err, &pgErr) {
			return nil, err
		}
		if _, err := tx.Exec(ctx, s.sql(`UPDATE {schema}.tasks SET lease_until = {now} + $3 * interval '1 microsecond'
			WHERE id = $2`), s.nowArg(), t.ID, micros(unrefundableRetry)); err != nil {
			return nil, err
		}
	}
	return out, nil
}
