-- imagegen store, version 11: the pending cap reads a per-owner count
-- instead of counting up to max-pending entries of the owner's pending
-- tasks in the index (1000 by default, on every submit).
--
-- A trigger on tasks notes every change of a task's pendingness (a task
-- created pending, except by submit_tasks, which counts its own; pending
-- to processing, failed or cancelled; back to pending on retry, release,
-- lease expiry or requeue; a pending task deleted) as a row of pending_moves: +1 or -1 for its owner. Inserting
-- a row never waits for another transaction, so claims that take many
-- owners' tasks at once cannot deadlock on counters. A submit, which
-- holds its owner's account row, folds the owner's moves into
-- pending_counts: work bounded by the moves since the owner's last
-- submit, a constant per task on average. pending_counts.n plus the
-- owner's moves is the owner's pending tasks, exactly, in any snapshot.

CREATE TABLE {schema}.pending_counts (
	owner text PRIMARY KEY,
	n     bigint NOT NULL
);

CREATE TABLE {schema}.pending_moves (
	owner text NOT NULL,
	d     integer NOT NULL
);
CREATE INDEX pending_moves_owner ON {schema}.pending_moves (owner);

CREATE FUNCTION {schema}.note_pending_move() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP = 'INSERT' THEN
		-- submit_tasks counts its own tasks (see there).
		IF current_setting('imagegen.pending_counted', true) = 'on' THEN
			RETURN NULL;
		END IF;
	ELSE
		IF OLD.status = 'pending' THEN
			INSERT INTO {schema}.pending_moves (owner, d) VALUES (OLD.owner, -1);
		END IF;
	END IF;
	IF TG_OP <> 'DELETE' THEN
		IF NEW.status = 'pending' THEN
			INSERT INTO {schema}.pending_moves (owner, d) VALUES (NEW.owner, 1);
		END IF;
	END IF;
	RETURN NULL;
END $$;

-- Only the changes that move a task into or out of pending fire, so a
-- heartbeat or a progress update costs nothing more.
CREATE TRIGGER tasks_pending_insert AFTER INSERT ON {schema}.tasks
	FOR EACH ROW WHEN (NEW.status = 'pending') EXECUTE FUNCTION {schema}.note_pending_move();
CREATE TRIGGER tasks_pending_update AFTER UPDATE OF status, owner ON {schema}.tasks
	FOR EACH ROW WHEN ((OLD.status = 'pending' OR NEW.status = 'pending')
		AND (OLD.status IS DISTINCT FROM NEW.status OR OLD.owner IS DISTINCT FROM NEW.owner))
	EXECUTE FUNCTION {schema}.note_pending_move();
CREATE TRIGGER tasks_pending_delete AFTER DELETE ON {schema}.tasks
	FOR EACH ROW WHEN (OLD.status = 'pending') EXECUTE FUNCTION {schema}.note_pending_move();

-- The triggers' lock on tasks is held from here to the end of the
-- migration, so no change slips between them and this count.
INSERT INTO {schema}.pending_counts (owner, n)
	SELECT owner, count(*) FROM {schema}.tasks WHERE status = 'pending' GROUP BY owner;

-- pending_count folds p_owner's moves into its count and returns it.
-- Callers hold the owner's account row (submit_tasks), so two folds of
-- one owner never run at once.
CREATE FUNCTION {schema}.pending_count(p_owner text) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
	moved bigint;
	total bigint;
BEGIN
	WITH m AS (DELETE FROM {schema}.pending_moves WHERE owner = p_owner RETURNING d)
	SELECT coalesce(sum(d), 0) INTO moved FROM m;
	IF moved <> 0 THEN
		INSERT INTO {schema}.pending_counts AS c (owner, n) VALUES (p_owner, moved)
			ON CONFLICT (owner) DO UPDATE SET n = c.n + EXCLUDED.n
			RETURNING c.n INTO total;
		RETURN total;
	END IF;
	SELECT c.n INTO total FROM {schema}.pending_counts c WHERE c.owner = p_owner;
	RETURN coalesce(total, 0);
END $$;

-- submit_tasks as in version 10, with the pending cap read from
-- pending_count.
CREATE OR REPLACE FUNCTION {schema}.submit_tasks(p_ids text[], p_owners text[], p_requests text[], p_models text[],
	p_costs bigint[], p_callbacks text[], p_events text[], p_request_ids text[], p_max_pending integer[],
	p_now timestamptz, OUT code integer[], OUT balance bigint[])
LANGUAGE plpgsql AS $$
DECLARE
	b bigint;
	n bigint;
	v bigint;
	pending bigint;
BEGIN
	code := '{}';
	balance := '{}';
	v := {schema}.vtime(p_now);
	-- Its inserts add to pending_counts here, under the owner's account
	-- row, rather than as moves: a row of pending_moves written and
	-- deleted per submit would leave the owner's index entries dead.
	-- create_tasks (processes of version 7 while a deployment rolls)
	-- does not set this, so the trigger notes its tasks.
	PERFORM set_config('imagegen.pending_counted', 'on', true);
	FOR i IN 1 .. coalesce(cardinality(p_ids), 0) LOOP
		UPDATE {schema}.accounts a SET balance = a.balance - p_costs[i]
			WHERE a.owner = p_owners[i] AND a.balance >= p_costs[i]
			RETURNING a.balance INTO b;
		IF NOT FOUND THEN
			SELECT a.balance INTO b FROM {schema}.accounts a WHERE a.owner = p_owners[i];
			code := code || 0;
			balance := balance || coalesce(b, 0);
			CONTINUE;
		END IF;
		-- The account row is locked, so this submit alone folds the owner's moves.
		pending := {schema}.pending_count(p_owners[i]);
		IF p_max_pending[i] > 0 AND pending >= p_max_pending[i] THEN
			UPDATE {schema}.accounts a SET balance = a.balance + p_costs[i] WHERE a.owner = p_owners[i]
				RETURNING a.balance INTO b;
			code := code || -2;
			balance := balance || b;
			CONTINUE;
		END IF;
		INSERT INTO {schema}.tasks (id, owner, request, model, cost, status, run_after, callback_url, callback_events,
				request_id, created_at, updated_at, tag)
			VALUES (p_ids[i], p_owners[i], p_requests[i]::jsonb, p_models[i], p_costs[i], 'pending', p_now,
				p_callbacks[i], p_events[i], p_request_ids[i], p_now, p_now, {schema}.next_tag(p_owners[i], v))
			ON CONFLICT (id) DO NOTHING;
		IF NOT FOUND THEN
			UPDATE {schema}.accounts a SET balance = a.balance + p_costs[i] WHERE a.owner = p_owners[i]
				RETURNING a.balance INTO b;
			code := code || -1;
			balance := balance || b;
			CONTINUE;
		END IF;
		INSERT INTO {schema}.pending_counts AS c (owner, n) VALUES (p_owners[i], 1)
			ON CONFLICT (owner) DO UPDATE SET n = c.n + 1;
		UPDATE {schema}.accounts a SET entries = a.entries + 1 WHERE a.owner = p_owners[i] RETURNING a.entries INTO n;
		INSERT INTO {schema}.ledger (owner, n, kind, amount, ref, at, balance_after)
			VALUES (p_owners[i], n, 'charge', -p_costs[i], 'task:' || p_ids[i], p_now, b);
		code := code || 1;
		balance := balance || b;
	END LOOP;
END $$;
