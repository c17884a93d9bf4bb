-- imagegen store, version 17: claim_free (version 14) with less fixed
-- work per claim, the same tasks claimed in the same order.
--
-- perf of the backends in the bench module's pipeline: with an instant
-- model a claim takes 11 tasks on average (half of them fewer than 16),
-- so what a claim costs whatever its size weighs as much as what it
-- costs a task.
--
--   - Its statements keep one generic plan (plan_cache_mode for the
--     function's calls). The UPDATE's parameters are arrays whose length
--     PostgreSQL sees in a custom plan: where its first executions claimed
--     few tasks, it planned the UPDATE and its CTEs afresh at every call,
--     inlining wants() (its SQL parsed each time): a quarter of the
--     backends' CPU in a run of one-task claims, 0.55 against 0.31 ms a
--     one-task claim (pgbench, one session). The walk's plan stays the
--     walk of tasks_fair in order (a cursor's plan is for its first rows;
--     TestClaimWalksTheQueueInOrder).
--   - Whether a model is paused is read once a claim, not for every task
--     walked (an anti-join probe of models per task); with a model
--     paused the walk passes over its tasks as before.
--   - The UPDATE finds the rows the walk locked by their ctid (a TID
--     scan: a row locked FOR UPDATE stays where it is until this
--     transaction ends, and the walk returns the version it locked), not
--     by a second probe of tasks_pkey per task. No other condition: one
--     on status let the planner, on a young table, read the whole of a
--     pending-only index instead (tasks_owner_pending, for every claim).
--   - The processing callbacks of first claims are queued by a statement
--     of their own, run only when the walk met a task that wants one,
--     rather than a CTE of the UPDATE whose insert into webhooks was
--     set up (and its indexes opened) at every claim.
CREATE OR REPLACE FUNCTION {schema}.claim_free(p_now timestamptz, p_lease interval, p_n integer)
RETURNS SETOF {schema}.tasks
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
	head refcursor;
	v_tid tid;
	v_hook boolean;
	v_tids tid[] := '{}';
	v_hooks tid[] := '{}';
BEGIN
	PERFORM set_config('synchronous_commit', 'off', true);
	PERFORM set_config('imagegen.moves_noted', 'on', true);
	IF EXISTS (SELECT 1 FROM {schema}.models m WHERE m.paused_until > p_now) THEN
		OPEN head NO SCROLL FOR SELECT p.ctid,
				p.started_at IS NULL AND p.callback_url <> '' AND {schema}.wants(p.callback_events, 'processing')
			FROM {schema}.tasks p
			WHERE p.status = 'pending' AND p.run_after <= p_now
				AND NOT EXISTS (SELECT 1 FROM {schema}.models m WHERE m.model = p.model AND m.paused_until > p_now)
			ORDER BY p.tag, p.seq
			FOR UPDATE SKIP LOCKED;
	ELSE
		OPEN head NO SCROLL FOR SELECT p.ctid,
				p.started_at IS NULL AND p.callback_url <> '' AND {schema}.wants(p.callback_events, 'processing')
			FROM {schema}.tasks p
			WHERE p.status = 'pending' AND p.run_after <= p_now
			ORDER BY p.tag, p.seq
			FOR UPDATE SKIP LOCKED;
	END IF;
	WHILE cardinality(v_tids) < p_n LOOP
		FETCH head INTO v_tid, v_hook;
		EXIT WHEN NOT FOUND;
		v_tids := v_tids || v_tid;
		IF v_hook THEN
			v_hooks := v_hooks || v_tid;
		END IF;
	END LOOP;
	CLOSE head;
	IF cardinality(v_tids) = 0 THEN
		RETURN;
	END IF;
	IF cardinality(v_hooks) > 0 THEN
		INSERT INTO {schema}.webhooks (id, task_id, event, due)
		SELECT t.id || ':processing', t.id, 'processing', p_now FROM {schema}.tasks t
		WHERE t.ctid = ANY (v_hooks)
		ON CONFLICT (id) DO NOTHING;
	END IF;
	RETURN QUERY WITH claimed AS (
		UPDATE {schema}.tasks t
		SET status = 'processing', attempt = t.attempt + 1, started_at = coalesce(t.started_at, p_now),
			lease_until = p_now + p_lease, updated_at = p_now, progress = 0
		WHERE t.ctid = ANY (v_tids)
		RETURNING t.*
	), moves AS (
		INSERT INTO {schema}.pending_moves (owner, d) SELECT c.owner, -count(*) FROM claimed c GROUP BY c.owner
	)
	SELECT * FROM claimed c ORDER BY c.tag, c.seq;
END $$;
