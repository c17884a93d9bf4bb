-- Back to version 19: one fair queue of every model's tasks, tasks_fair,
-- walked from its head by vtime (version 19), claim_free (version 17)
-- and claim_tasks (version 12).
DROP FUNCTION {schema}.claim_free(timestamptz, interval, integer, integer);
CREATE FUNCTION {schema}.claim_free(p_now timestamptz, p_lease interval, p_n integer)
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

CREATE OR REPLACE FUNCTION {schema}.vtime(p_now timestamptz) RETURNS bigint
LANGUAGE plpgsql STABLE AS $$
DECLARE
	head NO SCROLL CURSOR FOR SELECT p.tag, p.run_after FROM {schema}.tasks p
		WHERE p.status = 'pending' ORDER BY p.tag, p.seq;
	v bigint;
	v_head bigint;
	v_first bigint;
	v_tag bigint;
	v_run_after timestamptz;
BEGIN
	v := (SELECT max(tag) FROM {schema}.tasks WHERE status = 'processing');
	OPEN head;
	LOOP
		FETCH head INTO v_tag, v_run_after;
		EXIT WHEN NOT FOUND;
		v_first := coalesce(v_first, v_tag);
		IF v_run_after <= p_now THEN
			v_head := v_tag;
			EXIT;
		END IF;
	END LOOP;
	CLOSE head;
	-- greatest passes over NULLs: either alone, or 0 when neither is.
	RETURN coalesce(greatest(v, coalesce(v_head, v_first) - 1000), 0);
END $$;

DROP INDEX {schema}.tasks_model_fair;
CREATE INDEX tasks_fair ON {schema}.tasks (tag, seq) WHERE status = 'pending';
