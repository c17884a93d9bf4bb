-- Back to version 11: vtime and next_tag in SQL, the pending counts in
-- pending_counts, the insert trigger, and claims noted by the trigger.

LOCK TABLE {schema}.tasks IN SHARE ROW EXCLUSIVE MODE;
CREATE TABLE {schema}.pending_counts (
	owner text PRIMARY KEY,
	n     bigint NOT NULL
);
INSERT INTO {schema}.pending_counts (owner, n) SELECT owner, pending FROM {schema}.accounts WHERE pending <> 0;
ALTER TABLE {schema}.accounts DROP COLUMN pending;

DROP TRIGGER tasks_pending_update ON {schema}.tasks;
CREATE TRIGGER tasks_pending_insert AFTER INSERT ON {schema}.tasks
	FOR EACH ROW WHEN (NEW.status = 'pending') EXECUTE FUNCTION {schema}.note_pending_move();
CREATE TRIGGER tasks_pending_update AFTER UPDATE OF status, owner ON {schema}.tasks
	FOR EACH ROW WHEN ((OLD.status = 'pending' OR NEW.status = 'pending')
		AND (OLD.status IS DISTINCT FROM NEW.status OR OLD.owner IS DISTINCT FROM NEW.owner))
	EXECUTE FUNCTION {schema}.note_pending_move();

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

-- create_tasks as in version 1.
DROP FUNCTION {schema}.create_tasks(text[], text[], text[], text[], bigint[], text[], text[], text[], timestamptz);
CREATE FUNCTION {schema}.create_tasks(p_ids text[], p_owners text[], p_requests text[], p_models text[],
	p_costs bigint[], p_callbacks text[], p_events text[], p_request_ids text[], p_now timestamptz, OUT code integer[], OUT balance bigint[])
LANGUAGE plpgsql AS $$
DECLARE
	b bigint;
	n bigint;
BEGIN
	code := '{}';
	balance := '{}';
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
		INSERT INTO {schema}.tasks (id, owner, request, model, cost, status, run_after, callback_url, callback_events,
				request_id, created_at, updated_at)
			VALUES (p_ids[i], p_owners[i], p_requests[i]::jsonb, p_models[i], p_costs[i], 'pending', p_now,
				p_callbacks[i], p_events[i], p_request_ids[i], p_now, p_now)
			ON CONFLICT (id) DO NOTHING;
		IF NOT FOUND THEN
			UPDATE {schema}.accounts a SET balance = a.balance + p_costs[i] WHERE a.owner = p_owners[i]
				RETURNING a.balance INTO b;
			code := code || -1;
			balance := balance || b;
			CONTINUE;
		END IF;
		UPDATE {schema}.accounts a SET entries = a.entries + 1 WHERE a.owner = p_owners[i] RETURNING a.entries INTO n;
		INSERT INTO {schema}.ledger (owner, n, kind, amount, ref, at, balance_after)
			VALUES (p_owners[i], n, 'charge', -p_costs[i], 'task:' || p_ids[i], p_now, b);
		code := code || 1;
		balance := balance || b;
	END LOOP;
END $$;

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
BEGIN
	PERFORM set_config('synchronous_commit', 'off', true);
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
END $$;

CREATE OR REPLACE FUNCTION {schema}.vtime(p_now timestamptz) RETURNS bigint
LANGUAGE sql STABLE AS $$
	SELECT coalesce(
		(SELECT max(tag) FROM {schema}.tasks WHERE status = 'processing'),
		(SELECT tag - 1000 FROM {schema}.tasks WHERE status = 'pending' AND run_after <= p_now ORDER BY tag, seq LIMIT 1),
		0)
$$;

CREATE OR REPLACE FUNCTION {schema}.next_tag(p_owner text, p_v bigint) RETURNS bigint
LANGUAGE sql STABLE AS $$
	SELECT greatest(p_v, coalesce((SELECT tag FROM {schema}.tasks WHERE owner = p_owner AND status = 'pending'
			ORDER BY tag DESC LIMIT 1), p_v))
		+ 1000 / coalesce((SELECT weight FROM {schema}.accounts WHERE owner = p_owner), 1)
$$;
