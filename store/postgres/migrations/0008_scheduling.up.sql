-- imagegen store, version 8: the scheduler (docs/scheduling.md). Each
-- pending task has a fair-share tag, and claims take the lowest first,
-- so owners take turns; owners have weights; models have a rate's next
-- start and a pause. Running counts are the processing tasks whose lease
-- has not ended (the few rows of tasks_leases), so they need no table.

ALTER TABLE {schema}.tasks ADD COLUMN tag bigint NOT NULL DEFAULT 0;
-- The claim order.
CREATE INDEX tasks_fair ON {schema}.tasks (tag, seq) WHERE status = 'pending';
-- An owner's pending tasks: its last tag, and how many (the pending cap).
CREATE INDEX tasks_owner_pending ON {schema}.tasks (owner, tag) WHERE status = 'pending';

-- An owner's share: weight 3 takes three turns for one of weight 1.
ALTER TABLE {schema}.accounts ADD COLUMN weight integer NOT NULL DEFAULT 1 CHECK (weight BETWEEN 1 AND 1000);

CREATE TABLE {schema}.models (
	model        text PRIMARY KEY,
	next_start   timestamptz, -- the rate's next allowed start
	paused_until timestamptz  -- a provider's 429 (PauseModel)
);

-- vtime is where a line of an owner without pending tasks starts: the
-- largest tag being run, else one turn of weight 1 before the ready
-- head of the queue.
CREATE FUNCTION {schema}.vtime(p_now timestamptz) RETURNS bigint
LANGUAGE sql STABLE AS $$
	SELECT coalesce(
		(SELECT max(tag) FROM {schema}.tasks WHERE status = 'processing'),
		(SELECT tag - 1000 FROM {schema}.tasks WHERE status = 'pending' AND run_after <= p_now ORDER BY tag, seq LIMIT 1),
		0)
$$;

-- next_tag is the tag of an owner's next task: after its last pending
-- one, or after p_v when it has none, by 1000/weight.
CREATE FUNCTION {schema}.next_tag(p_owner text, p_v bigint) RETURNS bigint
LANGUAGE sql STABLE AS $$
	SELECT greatest(p_v, coalesce((SELECT max(tag) FROM {schema}.tasks WHERE owner = p_owner AND status = 'pending'), p_v))
		+ 1000 / coalesce((SELECT weight FROM {schema}.accounts WHERE owner = p_owner), 1)
$$;

-- submit_tasks is create_tasks with fair-share tags and the pending
-- cap: a task whose owner already has p_max_pending[i] pending tasks
-- (0: no cap) is refused with code -2, nothing charged.
CREATE FUNCTION {schema}.submit_tasks(p_ids text[], p_owners text[], p_requests text[], p_models text[],
	p_costs bigint[], p_callbacks text[], p_events text[], p_request_ids text[], p_max_pending integer[],
	p_now timestamptz, OUT code integer[], OUT balance bigint[])
LANGUAGE plpgsql AS $$
DECLARE
	b bigint;
	n bigint;
	v bigint;
BEGIN
	code := '{}';
	balance := '{}';
	v := {schema}.vtime(p_now);
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
		-- The account row is locked: the owner's count cannot move meanwhile.
		IF p_max_pending[i] > 0 AND (SELECT count(*) FROM (SELECT 1 FROM {schema}.tasks
				WHERE owner = p_owners[i] AND status = 'pending' LIMIT p_max_pending[i]) p) >= p_max_pending[i] THEN
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
		UPDATE {schema}.accounts a SET entries = a.entries + 1 WHERE a.owner = p_owners[i] RETURNING a.entries INTO n;
		INSERT INTO {schema}.ledger (owner, n, kind, amount, ref, at, balance_after)
			VALUES (p_owners[i], n, 'charge', -p_costs[i], 'task:' || p_ids[i], p_now, b);
		code := code || 1;
		balance := balance || b;
	END LOOP;
END $$;

-- held_reason says why a ready task of p_owner and p_model may not start
-- now (owner_cap, model_cap, model_rate), or NULL when it may. With
-- p_lock, it first takes the locks that keep concurrent claims from both
-- taking the last slot (transaction-scoped; one already held by another
-- claim counts as held), and for a model with a rate locks its row.
CREATE FUNCTION {schema}.held_reason(p_owner text, p_model text, p_now timestamptz, p_owner_cap integer,
	p_cap integer, p_rate integer, p_paused boolean, p_lock boolean) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	m record;
BEGIN
	IF p_owner_cap > 0 THEN
		IF p_lock AND NOT pg_try_advisory_xact_lock(hashtext('{schema}'), hashtext('o:' || p_owner)) THEN
			RETURN 'owner_cap';
		END IF;
		IF (SELECT count(*) FROM {schema}.tasks WHERE status = 'processing' AND lease_until > p_now
				AND owner = p_owner) >= p_owner_cap THEN
			RETURN 'owner_cap';
		END IF;
	END IF;
	IF p_cap > 0 THEN
		IF p_lock AND NOT pg_try_advisory_xact_lock(hashtext('{schema}'), hashtext('m:' || p_model)) THEN
			RETURN 'model_cap';
		END IF;
		IF (SELECT count(*) FROM {schema}.tasks WHERE status = 'processing' AND lease_until > p_now
				AND model = p_model) >= p_cap THEN
			RETURN 'model_cap';
		END IF;
	END IF;
	IF p_rate > 0 OR p_paused THEN
		IF p_rate > 0 AND p_lock THEN
			INSERT INTO {schema}.models (model) VALUES (p_model) ON CONFLICT (model) DO NOTHING;
			SELECT * INTO m FROM {schema}.models WHERE model = p_model FOR UPDATE SKIP LOCKED;
			IF NOT FOUND THEN
				RETURN 'model_rate';
			END IF;
		ELSE
			SELECT * INTO m FROM {schema}.models WHERE model = p_model;
		END IF;
		IF m.paused_until > p_now OR (p_rate > 0 AND m.next_start > p_now) THEN
			RETURN 'model_rate';
		END IF;
	END IF;
	RETURN NULL;
END $$;

-- claim_tasks leases up to p_n ready pending tasks, lowest tag first,
-- passing over at most p_scan that are not ready or that a cap or a rate
-- holds back (p_models[i] has cap p_caps[i] and rate p_rates[i], 0 for
-- none). Rows are taken with SKIP LOCKED, so concurrent claims pass each
-- other. The first claim of a task stamps started_at and queues its
-- processing callback, when its callback_events ask for one. A claim
-- commits without waiting for its WAL flush (see claimSQL in leases.go).
CREATE FUNCTION {schema}.claim_tasks(p_now timestamptz, p_lease interval, p_n integer, p_scan integer,
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
