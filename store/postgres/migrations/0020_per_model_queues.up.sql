-- imagegen store, version 20: each model's pending tasks are a queue of
-- their own, and the claims merge the heads of those queues, so that a
-- model held back (paused, at its cap, waiting for its rate) holds back
-- no other model's tasks, however long its backlog.
--
-- Until now the pending tasks were one queue in fair order, tasks_fair
-- (tag, seq), and claim_tasks walked it from its head, passing over at
-- most p_scan (imagegen.ClaimScan) tasks that could not start: with more
-- than that of a capped or rate-limited model at the head, a claim found
-- nothing although other models' tasks behind them could start, and the
-- workers sat idle. claim_free passed over a paused model's tasks with no
-- bound, its work growing with the backlog.
--
-- tasks_fair becomes tasks_model_fair (model, tag, seq): the same number
-- of entries (one per pending task), so a submit writes no more than
-- before, and each model's pending tasks in fair order. The models with
-- pending tasks are found by a loose scan of it (a recursive CTE, one
-- probe per model and one more; no table to keep up on submit), which
-- gives each model's head too.
--
-- The claims merge the models' queues in (tag, seq) order, the global
-- order of before. A model is looked at once per claim, when its next
-- task might be the next to take: a paused model, one at its cap (its
-- advisory lock taken as before), or one whose rate's next start is in
-- the future is dropped then, none of its tasks read; one that reaches
-- its cap or whose rate's next start moves past now as the claim takes
-- its tasks drops out there. Its queue is read through a cursor of its
-- own (FOR UPDATE SKIP LOCKED, planned for its first rows: in order, no
-- sort), fetched only when its head is needed: a model whose head comes
-- after the tasks taken is never read. Tasks passed over for another
-- reason (not ready, the owner at its cap) count against a budget of
-- p_scan per model: a model that spends it drops out of the claim. Rows
-- another claim holds are skipped by SKIP LOCKED without being seen (the
-- executor does not report them), so they are bounded by what the
-- concurrent claims lock, not by any backlog. A claim's work is so
-- bounded by its batch plus p_scan per model with pending tasks.
--
-- vtime, QueuePositions and SchedulerStats read the global order as a
-- merge of the models' queues too (vtime: the models' heads, and a walk
-- only of a model whose head is not ready).

DROP INDEX {schema}.tasks_fair;
CREATE INDEX tasks_model_fair ON {schema}.tasks (model, tag, seq) WHERE status = 'pending';

-- vtime as version 19 defined it: the larger of the largest running tag
-- and one turn of weight 1 before the ready head of the queue (before
-- the head when no task is ready), 0 when neither exists. The heads of
-- the models' queues come from one loose scan; the ready head is the
-- least of the ready ones among them, unless a model whose head waits
-- (a retry's delay) has a ready task before that: only such a model's
-- queue is walked, and no further than the ready head found so far.
CREATE OR REPLACE FUNCTION {schema}.vtime(p_now timestamptz) RETURNS bigint
LANGUAGE plpgsql STABLE AS $$
DECLARE
	walk refcursor;
	v bigint;
	v_head bigint;
	v_first bigint;
	v_models text[];
	v_tags bigint[];
	v_ready boolean[];
	v_tag bigint;
	v_run_after timestamptz;
BEGIN
	v := (SELECT max(tag) FROM {schema}.tasks WHERE status = 'processing');
	WITH RECURSIVE heads AS (
		(SELECT p.model, p.tag, p.run_after FROM {schema}.tasks p WHERE p.status = 'pending'
			ORDER BY p.model, p.tag, p.seq LIMIT 1)
		UNION ALL
		SELECT n.model, n.tag, n.run_after FROM heads h CROSS JOIN LATERAL (SELECT p.model, p.tag, p.run_after
			FROM {schema}.tasks p WHERE p.status = 'pending' AND p.model > h.model
			ORDER BY p.model, p.tag, p.seq LIMIT 1) n
	)
	SELECT array_agg(h.model), array_agg(h.tag), array_agg(h.run_after <= p_now), min(h.tag),
		min(h.tag) FILTER (WHERE h.run_after <= p_now)
	INTO v_models, v_tags, v_ready, v_first, v_head FROM heads h;
	FOR i IN 1 .. coalesce(cardinality(v_models), 0) LOOP
		CONTINUE WHEN v_ready[i] OR v_tags[i] >= v_head;
		OPEN walk NO SCROLL FOR SELECT p.tag, p.run_after FROM {schema}.tasks p
			WHERE p.status = 'pending' AND p.model = v_models[i] ORDER BY p.tag, p.seq;
		LOOP
			FETCH walk INTO v_tag, v_run_after;
			EXIT WHEN NOT FOUND OR v_tag >= v_head;
			IF v_run_after <= p_now THEN
				v_head := v_tag;
				EXIT;
			END IF;
		END LOOP;
		CLOSE walk;
	END LOOP;
	-- greatest passes over NULLs: either alone, or 0 when neither is.
	RETURN coalesce(greatest(v, coalesce(v_head, v_first) - 1000), 0);
END $$;

-- claim_free takes p_scan, each model's budget of tasks passed over
-- (not ready); called with three arguments, as processes of version 19
-- call it, it passes over 256 (imagegen.ClaimScan).
DROP FUNCTION {schema}.claim_free(timestamptz, interval, integer);

-- claim_free as version 17 wrote it (one generic plan, the UPDATE by
-- ctid, callbacks by a statement of their own, moves noted by the claim)
-- taking the tasks of the models' queues merged in fair order.
CREATE FUNCTION {schema}.claim_free(p_now timestamptz, p_lease interval, p_n integer, p_scan integer DEFAULT 256)
RETURNS SETOF {schema}.tasks
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
	-- Per model with pending tasks, not paused: its next task's (tag,
	-- seq), fetched (v_heads[i] its ctid) or, until then, a bound below
	-- it (the head the loose scan saw); its cursor; how many more tasks
	-- it may pass over. A model leaves v_live when its queue is spent.
	v_models text[];
	v_tags bigint[];
	v_seqs bigint[];
	v_heads tid[];
	v_hook_heads boolean[];
	v_curs refcursor[];
	v_left integer[];
	v_live boolean[];
	c refcursor;
	b integer;
	k integer;
	v_tid tid;
	v_tag bigint;
	v_seq bigint;
	v_ready boolean;
	v_hook boolean;
	v_tids tid[] := '{}';
	v_hooks tid[] := '{}';
BEGIN
	PERFORM set_config('synchronous_commit', 'off', true);
	PERFORM set_config('imagegen.moves_noted', 'on', true);
	WITH RECURSIVE heads AS (
		(SELECT p.model, p.tag, p.seq FROM {schema}.tasks p WHERE p.status = 'pending'
			ORDER BY p.model, p.tag, p.seq LIMIT 1)
		UNION ALL
		SELECT n.model, n.tag, n.seq FROM heads h CROSS JOIN LATERAL (SELECT p.model, p.tag, p.seq
			FROM {schema}.tasks p WHERE p.status = 'pending' AND p.model > h.model
			ORDER BY p.model, p.tag, p.seq LIMIT 1) n
	)
	SELECT array_agg(h.model), array_agg(h.tag), array_agg(h.seq) INTO v_models, v_tags, v_seqs FROM heads h
	WHERE NOT EXISTS (SELECT 1 FROM {schema}.models m WHERE m.model = h.model AND m.paused_until > p_now);
	k := coalesce(cardinality(v_models), 0);
	IF k = 0 THEN
		RETURN;
	END IF;
	v_heads := array_fill(NULL::tid, ARRAY[k]);
	v_hook_heads := array_fill(false, ARRAY[k]);
	v_curs := array_fill(NULL::refcursor, ARRAY[k]);
	v_left := array_fill(p_scan, ARRAY[k]);
	v_live := array_fill(true, ARRAY[k]);
	WHILE cardinality(v_tids) < p_n LOOP
		-- The model whose next task comes first.
		b := NULL;
		FOR i IN 1 .. k LOOP
			IF v_live[i] AND (b IS NULL OR (v_tags[i], v_seqs[i]) < (v_tags[b], v_seqs[b])) THEN
				b := i;
			END IF;
		END LOOP;
		EXIT WHEN b IS NULL;
		IF v_heads[b] IS NOT NULL THEN -- take it
			v_tids := v_tids || v_heads[b];
			IF v_hook_heads[b] THEN
				v_hooks := v_hooks || v_heads[b];
			END IF;
			v_heads[b] := NULL; -- its next comes after it: (tag, seq) stays a bound
			CONTINUE;
		END IF;
		-- Fetch its next ready task, passing over those not ready.
		c := v_curs[b];
		IF c IS NULL THEN
			OPEN c NO SCROLL FOR SELECT p.ctid, p.tag, p.seq, p.run_after <= p_now,
					p.started_at IS NULL AND p.callback_url <> '' AND {schema}.wants(p.callback_events, 'processing')
				FROM {schema}.tasks p
				WHERE p.status = 'pending' AND p.model = v_models[b]
				ORDER BY p.tag, p.seq
				FOR UPDATE SKIP LOCKED;
			v_curs[b] := c;
		END IF;
		LOOP
			FETCH c INTO v_tid, v_tag, v_seq, v_ready, v_hook;
			IF NOT FOUND THEN
				v_live[b] := false;
				EXIT;
			END IF;
			IF v_ready THEN
				v_heads[b] := v_tid;
				v_tags[b] := v_tag;
				v_seqs[b] := v_seq;
				v_hook_heads[b] := v_hook;
				EXIT;
			END IF;
			v_left[b] := v_left[b] - 1;
			IF v_left[b] <= 0 THEN
				v_live[b] := false;
				EXIT;
			END IF;
		END LOOP;
	END LOOP;
	FOR i IN 1 .. k LOOP
		IF v_curs[i] IS NOT NULL THEN
			c := v_curs[i];
			CLOSE c;
		END IF;
	END LOOP;
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

-- claim_tasks as version 12 wrote it (rows taken and updated one by one,
-- moves noted by the claim), taking the tasks of the models' queues
-- merged in fair order. A model's cap and rate are decided when the
-- merge first needs its next task, as held_reason decided them per task
-- (the model's advisory lock; its models row locked, SKIP LOCKED, when
-- it has a rate): held, it drops out unread. Its room under the cap is
-- counted down as the claim takes its tasks, and its rate's next start
-- pushed 1/rate later at each: it drops out when either is spent. The
-- owner cap is still decided per task, as the task is about to be taken
-- (held_reason with the owner's cap alone), so that the claim's own
-- takes count; the tasks it holds back and those not ready count against
-- the model's budget of p_scan.
CREATE OR REPLACE FUNCTION {schema}.claim_tasks(p_now timestamptz, p_lease interval, p_n integer, p_scan integer,
	p_owner_cap integer, p_models text[], p_caps integer[], p_rates integer[])
RETURNS SETOF {schema}.tasks
LANGUAGE plpgsql AS $$
DECLARE
	-- As in claim_free; v_room is how many more tasks a capped model may
	-- start (NULL: no cap), v_rate its rate (0: none), v_seen whether its
	-- cap and rate were decided.
	v_models text[];
	v_tags bigint[];
	v_seqs bigint[];
	v_heads text[];
	v_owners text[];
	v_firsts boolean[];
	v_curs refcursor[];
	v_left integer[];
	v_live boolean[];
	v_seen boolean[];
	v_room integer[];
	v_rate integer[];
	c refcursor;
	b integer;
	k integer;
	j integer;
	cap integer;
	rate integer;
	running bigint;
	v_next timestamptz;
	v_id text;
	v_owner text;
	v_tag bigint;
	v_seq bigint;
	v_ready boolean;
	v_first boolean;
	t {schema}.tasks;
	owners text[] := '{}';
BEGIN
	PERFORM set_config('synchronous_commit', 'off', true);
	PERFORM set_config('imagegen.moves_noted', 'on', true);
	WITH RECURSIVE heads AS (
		(SELECT p.model, p.tag, p.seq FROM {schema}.tasks p WHERE p.status = 'pending'
			ORDER BY p.model, p.tag, p.seq LIMIT 1)
		UNION ALL
		SELECT n.model, n.tag, n.seq FROM heads h CROSS JOIN LATERAL (SELECT p.model, p.tag, p.seq
			FROM {schema}.tasks p WHERE p.status = 'pending' AND p.model > h.model
			ORDER BY p.model, p.tag, p.seq LIMIT 1) n
	)
	SELECT array_agg(h.model), array_agg(h.tag), array_agg(h.seq) INTO v_models, v_tags, v_seqs FROM heads h
	WHERE NOT EXISTS (SELECT 1 FROM {schema}.models m WHERE m.model = h.model AND m.paused_until > p_now);
	k := coalesce(cardinality(v_models), 0);
	IF k = 0 THEN
		RETURN;
	END IF;
	v_heads := array_fill(NULL::text, ARRAY[k]);
	v_owners := array_fill(NULL::text, ARRAY[k]);
	v_firsts := array_fill(false, ARRAY[k]);
	v_curs := array_fill(NULL::refcursor, ARRAY[k]);
	v_left := array_fill(p_scan, ARRAY[k]);
	v_live := array_fill(true, ARRAY[k]);
	v_seen := array_fill(false, ARRAY[k]);
	v_room := array_fill(NULL::integer, ARRAY[k]);
	v_rate := array_fill(0, ARRAY[k]);
	WHILE cardinality(owners) < p_n LOOP
		b := NULL;
		FOR i IN 1 .. k LOOP
			IF v_live[i] AND (b IS NULL OR (v_tags[i], v_seqs[i]) < (v_tags[b], v_seqs[b])) THEN
				b := i;
			END IF;
		END LOOP;
		EXIT WHEN b IS NULL;
		IF NOT v_seen[b] THEN -- its cap and rate, once
			v_seen[b] := true;
			j := array_position(p_models, v_models[b]);
			cap := coalesce(p_caps[j], 0);
			rate := coalesce(p_rates[j], 0);
			IF cap > 0 THEN
				IF NOT pg_try_advisory_xact_lock(hashtext('{schema}'), hashtext('m:' || v_models[b])) THEN
					v_live[b] := false;
					CONTINUE;
				END IF;
				running := (SELECT count(*) FROM {schema}.tasks WHERE status = 'processing' AND lease_until > p_now
					AND model = v_models[b]);
				IF running >= cap THEN
					v_live[b] := false;
					CONTINUE;
				END IF;
				v_room[b] := cap - running;
			END IF;
			IF rate > 0 THEN
				INSERT INTO {schema}.models (model) VALUES (v_models[b]) ON CONFLICT (model) DO NOTHING;
				SELECT m.next_start INTO v_next FROM {schema}.models m WHERE m.model = v_models[b] FOR UPDATE SKIP LOCKED;
				IF NOT FOUND OR v_next > p_now THEN
					v_live[b] := false;
					CONTINUE;
				END IF;
				v_rate[b] := rate;
			END IF;
		END IF;
		IF v_heads[b] IS NOT NULL THEN -- take it, unless its owner is at its cap
			IF p_owner_cap > 0 AND
					{schema}.held_reason(v_owners[b], v_models[b], p_now, p_owner_cap, 0, 0, false, true) IS NOT NULL THEN
				v_heads[b] := NULL;
				v_left[b] := v_left[b] - 1;
				IF v_left[b] <= 0 THEN
					v_live[b] := false;
				END IF;
				CONTINUE;
			END IF;
			UPDATE {schema}.tasks SET status = 'processing', attempt = attempt + 1, started_at = coalesce(started_at, p_now),
				lease_until = p_now + p_lease, updated_at = p_now, progress = 0
			WHERE id = v_heads[b] RETURNING * INTO t;
			owners := owners || t.owner;
			IF v_firsts[b] AND t.callback_url <> '' AND {schema}.wants(t.callback_events, 'processing') THEN
				INSERT INTO {schema}.webhooks (id, task_id, event, due) VALUES (t.id || ':processing', t.id, 'processing', p_now)
					ON CONFLICT (id) DO NOTHING;
			END IF;
			v_heads[b] := NULL;
			IF v_room[b] IS NOT NULL THEN
				v_room[b] := v_room[b] - 1;
				IF v_room[b] <= 0 THEN
					v_live[b] := false;
				END IF;
			END IF;
			IF v_rate[b] > 0 THEN
				UPDATE {schema}.models SET next_start = greatest(coalesce(next_start, p_now), p_now) + interval '1 minute' / v_rate[b]
					WHERE model = v_models[b] RETURNING next_start INTO v_next;
				IF v_next > p_now THEN
					v_live[b] := false;
				END IF;
			END IF;
			RETURN NEXT t;
			CONTINUE;
		END IF;
		c := v_curs[b];
		IF c IS NULL THEN
			OPEN c NO SCROLL FOR SELECT p.id, p.owner, p.tag, p.seq, p.run_after <= p_now, p.started_at IS NULL
				FROM {schema}.tasks p
				WHERE p.status = 'pending' AND p.model = v_models[b]
				ORDER BY p.tag, p.seq
				FOR UPDATE SKIP LOCKED;
			v_curs[b] := c;
		END IF;
		LOOP
			FETCH c INTO v_id, v_owner, v_tag, v_seq, v_ready, v_first;
			IF NOT FOUND THEN
				v_live[b] := false;
				EXIT;
			END IF;
			IF v_ready THEN
				v_heads[b] := v_id;
				v_owners[b] := v_owner;
				v_tags[b] := v_tag;
				v_seqs[b] := v_seq;
				v_firsts[b] := v_first;
				EXIT;
			END IF;
			v_left[b] := v_left[b] - 1;
			IF v_left[b] <= 0 THEN
				v_live[b] := false;
				EXIT;
			END IF;
		END LOOP;
	END LOOP;
	FOR i IN 1 .. k LOOP
		IF v_curs[i] IS NOT NULL THEN
			c := v_curs[i];
			CLOSE c;
		END IF;
	END LOOP;
	IF cardinality(owners) > 0 THEN
		INSERT INTO {schema}.pending_moves (owner, d) SELECT o, -count(*) FROM unnest(owners) o GROUP BY o;
	END IF;
END $$;
