-- Back to version 25: the parked tasks go back to their models' queues
-- (the flag and its indexes dropped: a parked task is a pending task),
-- and the functions as version 25 had them (vtime as version 20 made
-- it, model_heads and claim_free as version 21, claim_tasks as 25).
-- Processes of version 26 must not run against the schema after this.

DROP TABLE {schema}.parked_owners;
DROP INDEX {schema}.tasks_parked_fair;
DROP INDEX {schema}.tasks_parked;
DROP INDEX {schema}.tasks_model_fair;
ALTER TABLE {schema}.tasks DROP COLUMN parked;
CREATE INDEX tasks_model_fair ON {schema}.tasks (model, tag, seq) WHERE status = 'pending';
DROP FUNCTION {schema}.model_room(text, timestamptz, integer, integer);
DROP FUNCTION {schema}.model_heads(timestamptz);
-- model_heads is the claims' loose scan of tasks_model_fair: the models
-- with pending tasks, paused ones left out, and the (tag, seq) of each
-- one's head, one index probe a model. claim_free and claim_tasks share
-- it.
CREATE FUNCTION {schema}.model_heads(p_now timestamptz, OUT models text[], OUT tags bigint[], OUT seqs bigint[])
LANGUAGE plpgsql STABLE AS $$
DECLARE
	v_paused text[] := ARRAY(SELECT m.model FROM {schema}.models m WHERE m.paused_until > p_now);
	v_model text;
	v_tag bigint;
	v_seq bigint;
BEGIN
	models := '{}';
	tags := '{}';
	seqs := '{}';
	SELECT p.model, p.tag, p.seq INTO v_model, v_tag, v_seq FROM {schema}.tasks p
		WHERE p.status = 'pending' ORDER BY p.model, p.tag, p.seq LIMIT 1;
	WHILE FOUND LOOP
		IF NOT v_model = ANY (v_paused) THEN
			models := models || v_model;
			tags := tags || v_tag;
			seqs := seqs || v_seq;
		END IF;
		SELECT p.model, p.tag, p.seq INTO v_model, v_tag, v_seq FROM {schema}.tasks p
			WHERE p.status = 'pending' AND p.model > v_model ORDER BY p.model, p.tag, p.seq LIMIT 1;
	END LOOP;
END $$;

-- vtime as version 19 defined it: the larger of the largest running tag
-- and one turn of weight 1 before the ready head of the queue (before
-- the head when no task is ready), 0 when neither exists. The heads of
-- the models' queues come from the loose scan; the ready head is the
-- least of the ready ones among them, unless a model whose head waits
-- (a retry's delay) has a ready task before that: only such a model's
-- queue is walked, and no further than the ready head found so far.
-- (The loose scan as a loop of statements costs less than as one
-- recursive CTE: 10.6 against 17.8 us a call with one model, version
-- 19's 7.9.)
CREATE OR REPLACE FUNCTION {schema}.vtime(p_now timestamptz) RETURNS bigint
LANGUAGE plpgsql STABLE AS $$
DECLARE
	walk refcursor;
	v bigint;
	v_head bigint;
	v_first bigint;
	v_model text;
	v_tag bigint;
	v_run_after timestamptz;
	v_waiting text[] := '{}';
	v_waiting_tags bigint[] := '{}';
BEGIN
	v := (SELECT max(tag) FROM {schema}.tasks WHERE status = 'processing');
	SELECT p.model, p.tag, p.run_after INTO v_model, v_tag, v_run_after FROM {schema}.tasks p
		WHERE p.status = 'pending' ORDER BY p.model, p.tag, p.seq LIMIT 1;
	WHILE FOUND LOOP
		v_first := least(v_first, v_tag);
		IF v_run_after <= p_now THEN
			v_head := least(v_head, v_tag);
		ELSE
			v_waiting := v_waiting || v_model;
			v_waiting_tags := v_waiting_tags || v_tag;
		END IF;
		SELECT p.model, p.tag, p.run_after INTO v_model, v_tag, v_run_after FROM {schema}.tasks p
			WHERE p.status = 'pending' AND p.model > v_model ORDER BY p.model, p.tag, p.seq LIMIT 1;
	END LOOP;
	FOR i IN 1 .. cardinality(v_waiting) LOOP
		CONTINUE WHEN v_waiting_tags[i] >= v_head;
		OPEN walk NO SCROLL FOR SELECT p.tag, p.run_after FROM {schema}.tasks p
			WHERE p.status = 'pending' AND p.model = v_waiting[i] ORDER BY p.tag, p.seq;
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

CREATE OR REPLACE FUNCTION {schema}.claim_free(p_now timestamptz, p_lease interval, p_n integer, p_scan integer DEFAULT 256)
RETURNS SETOF {schema}.tasks
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
	-- Per model with pending tasks, not paused: where its next task
	-- comes, (tag, seq), that of a head fetched and not yet taken
	-- (v_heads[i] its ctid), or until then a bound below it (the head
	-- the loose scan saw, or the last task taken); its cursor; how many
	-- more tasks it may pass over. v_live[i] is false once it is out of
	-- the claim.
	v_models text[] := '{}';
	v_tags bigint[] := '{}';
	v_seqs bigint[] := '{}';
	v_heads tid[];
	v_head_hooks boolean[];
	v_curs refcursor[];
	v_left integer[];
	v_live boolean[];
	v_ord integer[]; -- the live models, their next tasks in order
	c refcursor;
	b integer;
	nb integer;
	k integer;
	v_tid tid;
	v_tag bigint;
	v_seq bigint;
	v_ready boolean;
	v_hook boolean;
	v_until_tag bigint;
	v_until_seq bigint;
	v_pass integer;
	v_tids tid[] := '{}';
	v_hooks tid[] := '{}';
BEGIN
	PERFORM set_config('synchronous_commit', 'off', true);
	PERFORM set_config('imagegen.moves_noted', 'on', true);
	-- The loose scan: each model's head, paused models left out.
	SELECT h.models, h.tags, h.seqs INTO v_models, v_tags, v_seqs FROM {schema}.model_heads(p_now) h;
	k := cardinality(v_models);
	IF k = 0 THEN
		RETURN;
	END IF;
	IF k = 1 THEN
		-- One model (the common case): its queue alone, walked as version
		-- 17 walked the one queue, without the merge's bookkeeping.
		OPEN c NO SCROLL FOR SELECT p.ctid, p.run_after <= p_now,
				p.started_at IS NULL AND p.callback_url <> '' AND {schema}.wants(p.callback_events, 'processing')
			FROM {schema}.tasks p
			WHERE p.status = 'pending' AND p.model = v_models[1]
			ORDER BY p.tag, p.seq
			FOR UPDATE SKIP LOCKED;
		v_pass := p_scan; -- how many more it may pass over
		WHILE cardinality(v_tids) < p_n LOOP
			FETCH c INTO v_tid, v_ready, v_hook;
			EXIT WHEN NOT FOUND;
			IF NOT v_ready THEN
				v_pass := v_pass - 1;
				EXIT WHEN v_pass < 0;
				CONTINUE;
			END IF;
			v_tids := v_tids || v_tid;
			IF v_hook THEN
				v_hooks := v_hooks || v_tid;
			END IF;
		END LOOP;
		CLOSE c;
	ELSE -- the models' queues merged
		v_heads := array_fill(NULL::tid, ARRAY[k]);
		v_head_hooks := array_fill(false, ARRAY[k]);
		v_curs := array_fill(NULL::refcursor, ARRAY[k]);
		v_left := array_fill(p_scan, ARRAY[k]);
		v_live := array_fill(true, ARRAY[k]);
		v_ord := ARRAY(SELECT u.i FROM unnest(v_tags, v_seqs) WITH ORDINALITY AS u(tag, seq, i) ORDER BY u.tag, u.seq);
		WHILE cardinality(v_tids) < p_n AND cardinality(v_ord) > 0 LOOP
			-- The model whose next task comes first (b), and the one after (nb).
			b := v_ord[1];
			nb := v_ord[2];
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
			IF v_heads[b] IS NOT NULL THEN -- fetched before: it comes first now
				v_tids := v_tids || v_heads[b];
				IF v_head_hooks[b] THEN
					v_hooks := v_hooks || v_heads[b];
				END IF;
				v_heads[b] := NULL;
			END IF;
			-- Take b's ready tasks while they come before nb's next.
			v_until_tag := coalesce(v_tags[nb], 9223372036854775807);
			v_until_seq := coalesce(v_seqs[nb], 9223372036854775807);
			WHILE cardinality(v_tids) < p_n LOOP
				FETCH c INTO v_tid, v_tag, v_seq, v_ready, v_hook;
				IF NOT FOUND THEN
					v_live[b] := false;
					EXIT;
				END IF;
				IF NOT v_ready THEN
					v_left[b] := v_left[b] - 1;
					IF v_left[b] < 0 THEN
						v_live[b] := false;
						EXIT;
					END IF;
					CONTINUE;
				END IF;
				IF (v_tag, v_seq) > (v_until_tag, v_until_seq) THEN
					v_heads[b] := v_tid;
					v_head_hooks[b] := v_hook;
					v_tags[b] := v_tag;
					v_seqs[b] := v_seq;
					EXIT;
				END IF;
				v_tids := v_tids || v_tid;
				IF v_hook THEN
					v_hooks := v_hooks || v_tid;
				END IF;
			END LOOP;
			IF v_live[b] THEN -- its next task comes after nb's: b back in its place
				v_ord := {schema}.merge_reorder(v_ord, v_tags, v_seqs);
			ELSE
				v_ord := v_ord[2:];
			END IF;
		END LOOP;
		FOR i IN 1 .. k LOOP
			c := v_curs[i];
			IF c IS NOT NULL THEN
				CLOSE c;
			END IF;
		END LOOP;
	END IF;
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
	-- As in claim_free (v_heads holds ids); v_seen[i] is whether model
	-- i's cap and rate were decided, v_room[i] how many more of its tasks
	-- may start (NULL: no cap), v_rate[i] its rate (0: none).
	v_models text[] := '{}';
	v_tags bigint[] := '{}';
	v_seqs bigint[] := '{}';
	v_heads text[];
	v_head_owners text[];
	v_head_firsts boolean[];
	v_curs refcursor[];
	v_left integer[];
	v_live boolean[];
	v_ord integer[]; -- the live models, their next tasks in order
	v_seen boolean[];
	v_room integer[];
	v_rate integer[];
	c refcursor;
	b integer;
	nb integer;
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
	v_at_tag bigint; -- the place of the task in hand, for a cursor opened again
	v_at_seq bigint;
	v_ready boolean;
	v_first boolean;
	t {schema}.tasks;
	owners text[] := '{}';
	v_held text[] := '{}'; -- owners found at their cap
BEGIN
	PERFORM set_config('synchronous_commit', 'off', true);
	PERFORM set_config('imagegen.moves_noted', 'on', true);
	-- The loose scan: each model's head, paused models left out.
	SELECT h.models, h.tags, h.seqs INTO v_models, v_tags, v_seqs FROM {schema}.model_heads(p_now) h;
	k := cardinality(v_models);
	IF k = 0 THEN
		RETURN;
	END IF;
	v_heads := array_fill(NULL::text, ARRAY[k]);
	v_head_owners := array_fill(NULL::text, ARRAY[k]);
	v_head_firsts := array_fill(false, ARRAY[k]);
	v_curs := array_fill(NULL::refcursor, ARRAY[k]);
	v_left := array_fill(p_scan, ARRAY[k]);
	v_live := array_fill(true, ARRAY[k]);
	v_seen := array_fill(false, ARRAY[k]);
	v_room := array_fill(NULL::integer, ARRAY[k]);
	v_rate := array_fill(0, ARRAY[k]);
	v_ord := ARRAY(SELECT u.i FROM unnest(v_tags, v_seqs) WITH ORDINALITY AS u(tag, seq, i) ORDER BY u.tag, u.seq);
	WHILE cardinality(owners) < p_n LOOP
		-- A model dropped as it was first looked at leaves the order here.
		WHILE cardinality(v_ord) > 0 AND NOT v_live[v_ord[1]] LOOP
			v_ord := v_ord[2:];
		END LOOP;
		EXIT WHEN cardinality(v_ord) = 0;
		b := v_ord[1];
		nb := v_ord[2];
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
				SELECT m.next_start INTO v_next FROM {schema}.models m WHERE m.model = v_models[b] FOR UPDATE SKIP LOCKED;
				IF NOT FOUND THEN
					-- Another claim holds the row, or there is none yet: only
					-- the claim that takes the model's lock r: makes it, and
					-- no other waits for that claim to commit.
					IF EXISTS (SELECT 1 FROM {schema}.models m WHERE m.model = v_models[b])
							OR NOT pg_try_advisory_xact_lock(hashtext('{schema}'), hashtext('r:' || v_models[b])) THEN
						v_live[b] := false;
						CONTINUE;
					END IF;
					INSERT INTO {schema}.models (model) VALUES (v_models[b]) ON CONFLICT (model) DO NOTHING;
					SELECT m.next_start INTO v_next FROM {schema}.models m WHERE m.model = v_models[b] FOR UPDATE SKIP LOCKED;
					IF NOT FOUND THEN
						v_live[b] := false;
						CONTINUE;
					END IF;
				END IF;
				IF v_next > p_now THEN
					v_live[b] := false;
					CONTINUE;
				END IF;
				v_rate[b] := rate;
			END IF;
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
		WHILE cardinality(owners) < p_n LOOP
			IF v_heads[b] IS NOT NULL THEN
				v_id := v_heads[b];
				v_owner := v_head_owners[b];
				v_first := v_head_firsts[b];
				v_heads[b] := NULL;
				v_at_tag := v_tags[b];
				v_at_seq := v_seqs[b];
			ELSE
				FETCH c INTO v_id, v_owner, v_tag, v_seq, v_ready, v_first;
				IF NOT FOUND THEN
					v_live[b] := false;
					EXIT;
				END IF;
				v_at_tag := v_tag;
				v_at_seq := v_seq;
				IF NOT v_ready THEN
					v_left[b] := v_left[b] - 1;
					IF v_left[b] < 0 THEN
						v_live[b] := false;
						EXIT;
					END IF;
					CONTINUE;
				END IF;
				IF nb IS NOT NULL AND (v_tag, v_seq) > (v_tags[nb], v_seqs[nb]) THEN
					v_heads[b] := v_id;
					v_head_owners[b] := v_owner;
					v_head_firsts[b] := v_first;
					v_tags[b] := v_tag;
					v_seqs[b] := v_seq;
					EXIT;
				END IF;
			END IF;
			IF p_owner_cap > 0 THEN
				IF v_owner = ANY (v_held) THEN
					CONTINUE; -- counted once, when found at its cap
				END IF;
				IF {schema}.held_reason(v_owner, v_models[b], p_now, p_owner_cap, 0, 0, false, true) IS NOT NULL THEN
					v_held := v_held || v_owner;
					v_left[b] := v_left[b] - 1;
					IF v_left[b] < 0 THEN
						v_live[b] := false;
						EXIT;
					END IF;
					-- The model's queue read again from past this task, without
					-- the tasks of the owners found at their caps: the scan's
					-- filter passes them over before the rows are locked, so the
					-- claim neither locks them (a WAL record each) nor returns
					-- them one by one to this loop.
					CLOSE c;
					OPEN c NO SCROLL FOR SELECT p.id, p.owner, p.tag, p.seq, p.run_after <= p_now, p.started_at IS NULL
						FROM {schema}.tasks p
						WHERE p.status = 'pending' AND p.model = v_models[b] AND (p.tag, p.seq) > (v_at_tag, v_at_seq)
							AND p.owner <> ALL (v_held)
						ORDER BY p.tag, p.seq
						FOR UPDATE SKIP LOCKED;
					v_curs[b] := c;
					CONTINUE;
				END IF;
			END IF;
			UPDATE {schema}.tasks SET status = 'processing', attempt = attempt + 1, started_at = coalesce(started_at, p_now),
				lease_until = p_now + p_lease, updated_at = p_now, progress = 0
			WHERE id = v_id RETURNING * INTO t;
			owners := owners || t.owner;
			IF v_first AND t.callback_url <> '' AND {schema}.wants(t.callback_events, 'processing') THEN
				INSERT INTO {schema}.webhooks (id, task_id, event, due) VALUES (t.id || ':processing', t.id, 'processing', p_now)
					ON CONFLICT (id) DO NOTHING;
			END IF;
			RETURN NEXT t;
			IF v_rate[b] > 0 THEN
				UPDATE {schema}.models SET next_start = greatest(coalesce(next_start, p_now), p_now) + interval '1 minute' / v_rate[b]
					WHERE model = v_models[b] RETURNING next_start INTO v_next;
				IF v_next > p_now THEN
					v_live[b] := false;
				END IF;
			END IF;
			IF v_room[b] IS NOT NULL THEN
				v_room[b] := v_room[b] - 1;
				IF v_room[b] <= 0 THEN
					v_live[b] := false;
				END IF;
			END IF;
			EXIT WHEN NOT v_live[b];
		END LOOP;
		IF v_live[b] THEN -- its next task comes after nb's: b back in its place
			v_ord := {schema}.merge_reorder(v_ord, v_tags, v_seqs);
		ELSE
			v_ord := v_ord[2:];
		END IF;
	END LOOP;
	FOR i IN 1 .. k LOOP
		c := v_curs[i];
		IF c IS NOT NULL THEN
			CLOSE c;
		END IF;
	END LOOP;
	IF cardinality(owners) > 0 THEN
		INSERT INTO {schema}.pending_moves (owner, d) SELECT o, -count(*) FROM unnest(owners) o GROUP BY o;
	END IF;
END $$;

