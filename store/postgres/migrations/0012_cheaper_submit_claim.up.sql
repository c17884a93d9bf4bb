-- imagegen store, version 12: less server work per submit and per claim
-- (issue 27), the same guarantees.
--
-- vtime and next_tag become PL/pgSQL. A LANGUAGE sql function that is
-- not inlined is parsed and planned again at every call (fmgr_sql): for
-- these two, called once per submitted task, that was about half of a
-- submit's server CPU (perf of submit_tasks); PL/pgSQL keeps its plans
-- for the session.
--
-- An owner's pending count moves into its account row
-- (accounts.pending), which a submit updates anyway: the debit, the
-- ledger's entry count and the pending count are one row version, where
-- version 11 wrote the account row twice and pending_counts once.
-- pending_counts goes. The rule of version 11 is kept: accounts.pending
-- plus the owner's rows of pending_moves is the owner's pending tasks,
-- exactly, and only a transaction holding the owner's account row folds
-- the moves into it.
--
-- Submits count their own tasks (create_tasks, which processes of
-- version 7 may still call while a deployment rolls, is now submit_tasks
-- without a cap), so the insert trigger goes. Claims note their moves
-- themselves, one row per owner per claim instead of a trigger call and a
-- row per task: they set imagegen.moves_noted for their transaction, and
-- the update trigger passes over the changes of such a transaction. Every
-- other change of pendingness (retry, release, lease expiry, cancel,
-- requeue, a claim by a process of version 11) is still noted by the
-- trigger.

CREATE OR REPLACE FUNCTION {schema}.vtime(p_now timestamptz) RETURNS bigint
LANGUAGE plpgsql STABLE AS $$
BEGIN
	RETURN coalesce(
		(SELECT max(tag) FROM {schema}.tasks WHERE status = 'processing'),
		(SELECT tag - 1000 FROM {schema}.tasks WHERE status = 'pending' AND run_after <= p_now ORDER BY tag, seq LIMIT 1),
		0);
END $$;

CREATE OR REPLACE FUNCTION {schema}.next_tag(p_owner text, p_v bigint) RETURNS bigint
LANGUAGE plpgsql STABLE AS $$
BEGIN
	RETURN greatest(p_v, coalesce((SELECT tag FROM {schema}.tasks WHERE owner = p_owner AND status = 'pending'
			ORDER BY tag DESC LIMIT 1), p_v))
		+ 1000 / coalesce((SELECT weight FROM {schema}.accounts WHERE owner = p_owner), 1);
END $$;

ALTER TABLE {schema}.accounts ADD COLUMN pending bigint NOT NULL DEFAULT 0;

-- The trigger's lock on tasks is held from here to the end of the
-- migration (the triggers are replaced below), so no move is noted twice
-- or lost between the two counts.
LOCK TABLE {schema}.tasks IN SHARE ROW EXCLUSIVE MODE;
UPDATE {schema}.accounts a SET pending = c.n FROM {schema}.pending_counts c WHERE c.owner = a.owner;
DROP FUNCTION {schema}.pending_count(text);
DROP TABLE {schema}.pending_counts;

DROP TRIGGER tasks_pending_insert ON {schema}.tasks;
DROP TRIGGER tasks_pending_update ON {schema}.tasks;
CREATE TRIGGER tasks_pending_update AFTER UPDATE OF status, owner ON {schema}.tasks
	FOR EACH ROW WHEN ((OLD.status = 'pending' OR NEW.status = 'pending')
		AND (OLD.status IS DISTINCT FROM NEW.status OR OLD.owner IS DISTINCT FROM NEW.owner)
		AND current_setting('imagegen.moves_noted', true) IS DISTINCT FROM 'on')
	EXECUTE FUNCTION {schema}.note_pending_move();

-- submit_tasks as in version 11, with one write of the account row per
-- task created. The owner's moves are folded at its first task in the
-- batch, under its account row (tasks go in owner order, so the
-- owner's later tasks in the batch find none but those the batch did not
-- make). A refused task (id taken, queue full) puts the row back as it
-- was, in the same transaction: nothing charged, nothing counted.
CREATE OR REPLACE FUNCTION {schema}.submit_tasks(p_ids text[], p_owners text[], p_requests text[], p_models text[],
	p_costs bigint[], p_callbacks text[], p_events text[], p_request_ids text[], p_max_pending integer[],
	p_now timestamptz, OUT code integer[], OUT balance bigint[])
LANGUAGE plpgsql AS $$
DECLARE
	b bigint;
	n bigint;
	v bigint;
	w integer;
	pending bigint;
	moved bigint;
	folded text;
BEGIN
	code := '{}';
	balance := '{}';
	v := {schema}.vtime(p_now);
	FOR i IN 1 .. coalesce(cardinality(p_ids), 0) LOOP
		UPDATE {schema}.accounts a SET balance = a.balance - p_costs[i], entries = a.entries + 1, pending = a.pending + 1
			WHERE a.owner = p_owners[i] AND a.balance >= p_costs[i]
			RETURNING a.balance, a.entries, a.pending, a.weight INTO b, n, pending, w;
		IF NOT FOUND THEN
			SELECT a.balance INTO b FROM {schema}.accounts a WHERE a.owner = p_owners[i];
			code := code || 0;
			balance := balance || coalesce(b, 0);
			CONTINUE;
		END IF;
		-- The account row is locked: this transaction alone folds the
		-- owner's moves, and the count cannot move meanwhile.
		IF folded IS DISTINCT FROM p_owners[i] THEN
			folded := p_owners[i];
			WITH m AS (DELETE FROM {schema}.pending_moves WHERE owner = p_owners[i] RETURNING d)
			SELECT coalesce(sum(d), 0) INTO moved FROM m;
			IF moved <> 0 THEN
				UPDATE {schema}.accounts a SET pending = a.pending + moved WHERE a.owner = p_owners[i]
					RETURNING a.pending INTO pending;
			END IF;
		END IF;
		-- pending counts this task: the others are pending - 1.
		IF p_max_pending[i] > 0 AND pending - 1 >= p_max_pending[i] THEN
			UPDATE {schema}.accounts a SET balance = a.balance + p_costs[i], entries = a.entries - 1, pending = a.pending - 1
				WHERE a.owner = p_owners[i] RETURNING a.balance INTO b;
			code := code || -2;
			balance := balance || b;
			CONTINUE;
		END IF;
		INSERT INTO {schema}.tasks (id, owner, request, model, cost, status, run_after, callback_url, callback_events,
				request_id, created_at, updated_at, tag)
			VALUES (p_ids[i], p_owners[i], p_requests[i]::jsonb, p_models[i], p_costs[i], 'pending', p_now,
				p_callbacks[i], p_events[i], p_request_ids[i], p_now, p_now,
				greatest(v, coalesce((SELECT t.tag FROM {schema}.tasks t WHERE t.owner = p_owners[i] AND t.status = 'pending'
					ORDER BY t.tag DESC LIMIT 1), v)) + 1000 / w)
			ON CONFLICT (id) DO NOTHING;
		IF NOT FOUND THEN
			UPDATE {schema}.accounts a SET balance = a.balance + p_costs[i], entries = a.entries - 1, pending = a.pending - 1
				WHERE a.owner = p_owners[i] RETURNING a.balance INTO b;
			code := code || -1;
			balance := balance || b;
			CONTINUE;
		END IF;
		INSERT INTO {schema}.ledger (owner, n, kind, amount, ref, at, balance_after)
			VALUES (p_owners[i], n, 'charge', -p_costs[i], 'task:' || p_ids[i], p_now, b);
		code := code || 1;
		balance := balance || b;
	END LOOP;
END $$;

-- create_tasks (version 1's submit, without tags or a cap) for processes
-- of version 7 while a deployment rolls: submit_tasks without a cap, so
-- their tasks are counted and take their turn like any other.
CREATE OR REPLACE FUNCTION {schema}.create_tasks(p_ids text[], p_owners text[], p_requests text[], p_models text[],
	p_costs bigint[], p_callbacks text[], p_events text[], p_request_ids text[], p_now timestamptz,
	OUT code integer[], OUT balance bigint[])
LANGUAGE sql AS $$
	SELECT s.code, s.balance FROM {schema}.submit_tasks(p_ids, p_owners, p_requests, p_models, p_costs, p_callbacks,
		p_events, p_request_ids, array_fill(0, ARRAY[coalesce(cardinality(p_ids), 0)]), p_now) s
$$;

-- claim_tasks as in version 8, noting its moves itself: one row of
-- pending_moves per owner it took tasks of.
CREATE OR REPLACE FUNCTION {schema}.claim_tasks(p_now timestamptz, p_lease interval, p_n integer, p_scan integer,
	p_owner_cap integer, p_models text[], p_caps integer[], p_rates integer[])
RETURNS SETOF {schema}.tasks
LANGUAGE plpgsql AS $$
DECLARE
	c record;
	t {schema}.tasks;
	taken integer := 0;
	passed integer := 0;
	k integer;
	cap integer;
	rate integer;
	paused boolean;
	owners text[] := '{}';
BEGIN
	PERFORM set_config('synchronous_commit', 'off', true);
	PERFORM set_config('imagegen.moves_noted', 'on', true);
	paused := EXISTS (SELECT 1 FROM {schema}.models WHERE paused_until > p_now);
	FOR c IN SELECT id, owner, model, run_after, started_at IS NULL AS first FROM {schema}.tasks
		WHERE status = 'pending' ORDER BY tag, seq LIMIT p_n + p_scan + 1 FOR UPDATE SKIP LOCKED
	LOOP
		EXIT WHEN taken >= p_n OR passed > p_scan;
		k := array_position(p_models, c.model);
		cap := coalesce(p_caps[k], 0);
		rate := coalesce(p_rates[k], 0);
		IF c.run_after > p_now OR (p_owner_cap > 0 OR cap > 0 OR rate > 0 OR paused) AND
				{schema}.held_reason(c.owner, c.model, p_now, p_owner_cap, cap, rate, paused, true) IS NOT NULL THEN
			passed := passed + 1;
			CONTINUE;
		END IF;
		UPDATE {schema}.tasks SET status = 'processing', attempt = attempt + 1, started_at = coalesce(started_at, p_now),
			lease_until = p_now + p_lease, updated_at = p_now, progress = 0
		WHERE id = c.id RETURNING * INTO t;
		owners := owners || c.owner;
		IF c.first AND t.callback_url <> '' AND {schema}.wants(t.callback_events, 'processing') THEN
			INSERT INTO {schema}.webhooks (id, task_id, event, due) VALUES (c.id || ':processing', c.id, 'processing', p_now)
				ON CONFLICT (id) DO NOTHING;
		END IF;
		IF rate > 0 THEN
			UPDATE {schema}.models SET next_start = greatest(coalesce(next_start, p_now), p_now) + interval '1 minute' / rate
				WHERE model = c.model;
		END IF;
		taken := taken + 1;
		RETURN NEXT t;
	END LOOP;
	IF taken > 0 THEN
		INSERT INTO {schema}.pending_moves (owner, d) SELECT o, -count(*) FROM unnest(owners) o GROUP BY o;
	END IF;
END $$;
