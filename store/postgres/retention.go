package postgres

import "context"

// Swept counts what one Sweep removed.
type Swept struct {
	Tasks, Images, Webhooks, IdempotencyRecords, Sessions int64
	// Unparked counts parked tasks given back to their model's queue
	// because their owner had no parked record (see unparkStraysSQL).
	Unparked int64
}

// sweepRounds bounds the batches of one kind one Sweep deletes, so a
// sweep never runs for long; the next one carries on.
const sweepRounds = 100

// Sweep removes finished tasks, images, idempotency records and console
// sessions whose retention or lifetime has passed, in batches of Config.SweepBatch rows: each batch
// is one short DELETE … WHERE id IN (SELECT … LIMIT n FOR UPDATE SKIP
// LOCKED), so it holds no long lock and never waits for rows another
// statement holds. Expired records are already invisible to every read;
// Sweep only gives their space back. The ledger is never swept.
func (s *Store) Sweep(ctx context.Context) (Swept, error) {
	var out Swept
	steps := []struct {
		n   *int64
		sql string
	}{
		{&out.Tasks, `DELETE FROM {schema}.tasks WHERE id IN (
			SELECT id FROM {schema}.tasks WHERE expires_at <= {now} LIMIT $2 FOR UPDATE SKIP LOCKED)`},
		{&out.Images, `DELETE FROM {schema}.images WHERE id IN (
			SELECT id FROM {schema}.images WHERE expires_at <= {now} LIMIT $2 FOR UPDATE SKIP LOCKED)`},
		{&out.Webhooks, `DELETE FROM {schema}.webhooks WHERE id IN (
			SELECT w.id FROM {schema}.webhooks w LEFT JOIN {schema}.tasks t ON t.id = w.task_id
			WHERE t.id IS NULL OR t.expires_at <= {now} LIMIT $2)`},
		{&out.IdempotencyRecords, `DELETE FROM {schema}.idempotency WHERE (owner, key) IN (
			SELECT owner, key FROM {schema}.idempotency WHERE expires_at <= {now} AND (kept_until IS NULL OR kept_until <= {now})
			LIMIT $2 FOR UPDATE SKIP LOCKED)`},
		{&out.Sessions, `DELETE FROM {schema}.sessions WHERE id IN (
			SELECT id FROM {schema}.sessions WHERE expires_at <= {now} LIMIT $2 FOR UPDATE SKIP LOCKED)`},
	}
	for _, step := range steps {
		for range sweepRounds {
			tag, err := s.pool.Exec(ctx, s.sql(step.sql), s.nowArg(), s.sweepBatch)
			if err != nil {
				return out, s.wrapErr("sweep", err)
			}
			*step.n += tag.RowsAffected()
			if tag.RowsAffected() < int64(s.sweepBatch) {
				break
			}
		}
	}
	for range sweepRounds {
		tag, err := s.pool.Exec(ctx, s.sql(unparkStraysSQL), s.sweepBatch)
		if err != nil {
			return out, s.wrapErr("sweep", err)
		}
		out.Unparked += tag.RowsAffected()
		if tag.RowsAffected() < int64(s.sweepBatch) {
			break
		}
	}
	return out, nil
}

// unparkStraysSQL gives back to their model's queue up to $1 parked
// tasks whose owner has no record in parked_owners: claims merge a
// parked queue only through its owner's record, so such a task would
// wait until its owner was parked again in that model. This version's
// claims never leave one (they park and take records out under the
// owner's advisory lock), but a process of a version before 26 that
// requeues a task a claim had parked (cancelled while parked) writes
// 'pending' without clearing the flag. Unparking is always safe: a
// claim that meets the task in the model's queue parks it again if its
// owner is still parked.
const unparkStraysSQL = `UPDATE {schema}.tasks SET parked = false WHERE id IN (
	SELECT t.id FROM {schema}.tasks t
	WHERE t.status = 'pending' AND t.parked
		AND NOT EXISTS (SELECT 1 FROM {schema}.parked_owners o WHERE o.model = t.model AND o.owner = t.owner)
	LIMIT $1 FOR UPDATE SKIP LOCKED)`

// maybeSweep sweeps if SweepInterval has passed since this Store last
// did; errors are left for the next time (reads hide expired rows
// anyway).
func (s *Store) maybeSweep(ctx context.Context) {
	if s.sweepEvery < 0 {
		return
	}
	if s.sweeps.Due(s.sweepEvery) {
		_, _ = s.Sweep(ctx)
	}
}
