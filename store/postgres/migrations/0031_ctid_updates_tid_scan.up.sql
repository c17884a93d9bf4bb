-- imagegen store, version 31: the claims' UPDATEs of the rows they
-- locked, by ctid, are Tid Scans in every plan a session keeps: the same
-- statements and answers, each run by a helper function that sets
-- enable_seqscan = off for itself alone.
--
-- A claim (claim_free, claim_tasks) locks the rows it reads and then
-- writes them by ctid, WHERE ctid = ANY (the array of them): claim_free
-- takes its tasks (one UPDATE, and their pending moves), both set aside
-- the tasks they find not ready (SET delayed = true), claim_tasks parks
-- the tasks of owners at their caps (SET parked = true), and undelay,
-- which every claim calls first, gives a model's due retries back (SET
-- delayed = false). PostgreSQL plans ctid = ANY of an array it does not
-- know as ten rows, so ten random page reads for a Tid Scan; on a young
-- table, with no statistics, of a couple of hundred tasks (a dozen
-- pages) a Seq Scan costs less, and was chosen. PL/pgSQL keeps a
-- statement's generic plan for the session: from the first call in
-- claim_free (which sets plan_cache_mode = force_generic_plan), from the
-- sixth elsewhere when the generic plan is cheaper than the custom ones
-- were (undelay's). A session whose first claims came at 233 tasks then
-- read the whole tasks table, finished tasks included (they stay for the
-- retention period), at every later claim: 21,000 rows for 8 tasks.
--
-- Each of these UPDATEs now runs in a function of its own, LANGUAGE
-- plpgsql, SET enable_seqscan = off: set_delayed(tids, on) (undelay and
-- both claims), set_parked(tids) (claim_tasks) and take_tasks(tids, now,
-- lease) (claim_free's final statement, unchanged, its rows returned in
-- the same order). The setting holds while the function runs, so it
-- plans its one statement and nothing else: with no Seq Scan to choose,
-- ctid = ANY is a Tid Scan on any table and for any array, in custom and
-- generic plans alike. The rows the claims lock, and the statements that
-- find and lock them (undelay's subquery is now set_delayed's argument,
-- evaluated before the call), are as before.
--
-- Not chosen: an UPDATE a row at a time (WHERE ctid = v_tid, a Tid Scan
-- while the table has never been vacuumed, as PostgreSQL then takes it
-- for 10 pages at least, but a Seq Scan on a vacuumed table of a page or
-- so, and up to 1024 statements for the rows set aside or parked);
-- EXECUTE with the array as a parameter (planned at every claim, and
-- planned as a Seq Scan still while the table is small); SET
-- enable_seqscan = off on the claims themselves (it would hold for
-- every statement they and the functions they call run).

-- set_delayed flags the tasks at p_tids (rows the caller has locked) as
-- delayed retries (p_delayed) or not.
CREATE FUNCTION {schema}.set_delayed(p_tids tid[], p_delayed boolean) RETURNS void
LANGUAGE plpgsql
SET enable_seqscan = off
AS $$
BEGIN
	UPDATE {schema}.tasks SET delayed = p_delayed WHERE ctid = ANY (p_tids);
END $$;

-- set_parked flags the tasks at p_tids (rows the caller has locked) as
-- parked.
CREATE FUNCTION {schema}.set_parked(p_tids tid[]) RETURNS void
LANGUAGE plpgsql
SET enable_seqscan = off
AS $$
BEGIN
	UPDATE {schema}.tasks SET parked = true WHERE ctid = ANY (p_tids);
END $$;

-- take_tasks starts the tasks at p_tids (rows claim_free has locked),
-- notes them as pending no more, and returns them in claim order: the
-- statement that ended claim_free before.
CREATE FUNCTION {schema}.take_tasks(p_tids tid[], p_now timestamptz, p_lease interval)
RETURNS SETOF {schema}.tasks
LANGUAGE plpgsql
SET enable_seqscan = off
AS $$
BEGIN
	RETURN QUERY WITH claimed AS (
		UPDATE {schema}.tasks t
		SET status = 'processing', attempt = t.attempt + 1, started_at = coalesce(t.started_at, p_now),
			lease_until = p_now + p_lease, updated_at = p_now, progress = 0
		WHERE t.ctid = ANY (p_tids)
		RETURNING t.*
	), moves AS (
		INSERT INTO {schema}.pending_moves (owner, d) SELECT c.owner, -count(*) FROM claimed c GROUP BY c.owner
	)
	SELECT * FROM claimed c ORDER BY c.tag, c.seq;
END $$;

-- undelay as version 27 made it, each model's due retries (locked by
-- the subquery, as before) given back by set_delayed.
CREATE OR REPLACE FUNCTION {schema}.undelay(p_now timestamptz) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	v_model text;
	v_due timestamptz;
BEGIN
	SELECT p.model, p.run_after INTO v_model, v_due FROM {schema}.tasks p
		WHERE p.status = 'pending' AND p.delayed ORDER BY p.model, p.run_after LIMIT 1;
	WHILE FOUND LOOP
		IF v_due <= p_now THEN
			PERFORM {schema}.set_delayed(ARRAY(SELECT p.ctid FROM {schema}.tasks p
				WHERE p.status = 'pending' AND p.delayed AND p.model = v_model AND p.run_after <= p_now
				ORDER BY p.run_after LIMIT 1024 FOR UPDATE SKIP LOCKED), false);
		END IF;
		SELECT p.model, p.run_after INTO v_model, v_due FROM {schema}.tasks p
			WHERE p.status = 'pending' AND p.delayed AND p.model > v_model ORDER BY p.model, p.run_after LIMIT 1;
	END LOOP;
END $$;

-- claim_tasks as version 27 made it, the tasks it sets aside and those
-- it parks flagged by set_delayed and set_parked.
CREATE OR REPLACE FUNCTION {schema}.claim_tasks(p_now timestamptz, p_lease interval, p_n integer, p_scan integer,
	p_owner_cap integer, p_models text[], p_caps integer[], p_rates integer[])
RETURNS SETOF {schema}.tasks
LANGUAGE plpgsql AS $$
DECLARE
	-- Per model i: its name, whether it has parked owners, whether its
	-- cap and rate were decided (v_seen), how many more of its tasks may
	-- start (v_room, NULL: no cap), its rate (0: none), whether it may
	-- still start tasks in this claim (v_mlive), and whether it has more
	-- parked owners than the claim looked at (v_more).
	v_models text[];
	v_parked boolean[];
	v_seen boolean[];
	v_room integer[];
	v_rate integer[];
	v_mlive boolean[];
	v_more boolean[];
	-- Per queue b: its model (q_model), its owner (a parked queue's, NULL
	-- for a model's queue), where its next task comes (v_tags, v_seqs: a
	-- head fetched and not yet taken, v_heads[b], or a bound below it),
	-- its cursor, how many more tasks it may pass over, whether it is in
	-- the claim, how many of its tasks the claim parks.
	q_model integer[];
	q_owner text[];
	v_tags bigint[];
	v_seqs bigint[];
	v_heads text[];
	v_head_tids tid[];
	v_head_owners text[];
	v_head_firsts boolean[];
	v_curs refcursor[];
	v_left integer[];
	v_live boolean[];
	v_parkn integer[];
	v_delayn integer[]; -- how many of its tasks the claim sets aside
	v_ord integer[]; -- the live queues, their next tasks in order
	-- What the claim knows of a model's parked owners, by key (model
	-- number '/' owner): 'merged' (looked at, with a free slot or no
	-- owner cap), 'parked' (parked, not merged), 'none' (not parked),
	-- 'park' (the claim parks the owner's tasks met in the model's queue,
	-- under the model and owner's lock p:) or 'skip' (it could not take
	-- that lock: its tasks are left out of the scan).
	v_pkeys text[] := '{}';
	v_pstate text[] := '{}';
	v_held text[] := '{}'; -- owners found at their cap
	v_counted text[] := '{}'; -- owners counted against a look-ahead
	v_park_tids tid[] := '{}'; -- the tasks to park
	v_delay_tids tid[] := '{}'; -- the tasks to set aside
	v_park_models text[] := '{}'; -- the models and owners they are of
	v_park_owners text[] := '{}';
	v_gone_models text[] := '{}'; -- parked queues found empty, maybe
	v_gone_owners text[] := '{}';
	v_looked text[];
	v_excl text[];
	c refcursor;
	b integer;
	nb integer;
	k integer;
	mi integer;
	j integer;
	v_key text;
	v_state text;
	v_park boolean;
	v_next timestamptz;
	v_tid tid;
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
BEGIN
	PERFORM set_config('synchronous_commit', 'off', true);
	PERFORM set_config('imagegen.moves_noted', 'on', true);
	PERFORM {schema}.undelay(p_now);
	-- The loose scans: each model's head, paused models left out, and the
	-- models with parked owners.
	SELECT h.models, h.tags, h.seqs, h.parked INTO v_models, v_tags, v_seqs, v_parked FROM {schema}.model_heads(p_now) h;
	k := cardinality(v_models);
	IF k = 0 THEN
		RETURN;
	END IF;
	v_seen := array_fill(false, ARRAY[k]);
	v_room := array_fill(NULL::integer, ARRAY[k]);
	v_rate := array_fill(0, ARRAY[k]);
	v_mlive := array_fill(true, ARRAY[k]);
	v_more := array_fill(false, ARRAY[k]);
	q_model := ARRAY(SELECT generate_series(1, k));
	q_owner := array_fill(NULL::text, ARRAY[k]);
	v_live := ARRAY(SELECT u.tag IS NOT NULL FROM unnest(v_tags) WITH ORDINALITY AS u(tag, i) ORDER BY u.i);
	IF true = ANY (v_parked) THEN
		-- Up to 64 parked owners of each model that may start a task, the
		-- least recently looked at first; the parked queue of each with a
		-- free slot (any, with no owner cap) joins the merge, its head read
		-- unlocked as the models' heads are.
		FOR i IN 1 .. k LOOP
			CONTINUE WHEN NOT v_parked[i];
			v_seen[i] := true;
			j := array_position(p_models, v_models[i]);
			IF coalesce(p_caps[j], 0) > 0 OR coalesce(p_rates[j], 0) > 0 THEN
				v_room[i] := {schema}.model_room(v_models[i], p_now, coalesce(p_caps[j], 0), coalesce(p_rates[j], 0));
				IF v_room[i] = 0 THEN
					v_mlive[i] := false;
					CONTINUE;
				END IF;
				v_rate[i] := coalesce(p_rates[j], 0);
			END IF;
			v_looked := ARRAY(SELECT o.owner FROM {schema}.parked_owners o WHERE o.model = v_models[i]
				ORDER BY o.looked_at, o.owner LIMIT 64);
			CONTINUE WHEN cardinality(v_looked) = 0;
			v_more[i] := cardinality(v_looked) = 64;
			IF v_more[i] THEN
				-- Maybe more than are looked at: those looked at go last,
				-- but for those another claim is noting (never waited for).
				UPDATE {schema}.parked_owners SET looked_at = p_now WHERE ctid = ANY (ARRAY(SELECT o.ctid
					FROM {schema}.parked_owners o WHERE o.model = v_models[i] AND o.owner = ANY (v_looked)
					FOR UPDATE SKIP LOCKED));
			END IF;
			FOREACH v_owner IN ARRAY v_looked LOOP
				v_pkeys := v_pkeys || (i || '/' || v_owner);
				IF p_owner_cap > 0 AND (v_owner = ANY (v_held)
						OR {schema}.held_reason(v_owner, v_models[i], p_now, p_owner_cap, 0, 0, false, true) IS NOT NULL) THEN
					IF NOT v_owner = ANY (v_held) THEN
						v_held := v_held || v_owner;
					END IF;
					v_pstate := v_pstate || 'parked'::text;
					CONTINUE;
				END IF;
				v_pstate := v_pstate || 'merged'::text;
				SELECT p.tag, p.seq INTO v_tag, v_seq FROM {schema}.tasks p
					WHERE p.status = 'pending' AND p.parked AND p.model = v_models[i] AND p.owner = v_owner
					ORDER BY p.tag, p.seq LIMIT 1;
				IF NOT FOUND THEN
					v_gone_models := v_gone_models || v_models[i];
					v_gone_owners := v_gone_owners || v_owner;
					CONTINUE;
				END IF;
				q_model := q_model || i;
				q_owner := q_owner || v_owner;
				v_tags := v_tags || v_tag;
				v_seqs := v_seqs || v_seq;
				v_live := v_live || true;
			END LOOP;
		END LOOP;
	END IF;
	j := cardinality(q_model);
	v_heads := array_fill(NULL::text, ARRAY[j]);
	v_head_tids := array_fill(NULL::tid, ARRAY[j]);
	v_head_owners := array_fill(NULL::text, ARRAY[j]);
	v_head_firsts := array_fill(false, ARRAY[j]);
	v_curs := array_fill(NULL::refcursor, ARRAY[j]);
	v_left := array_fill(p_scan, ARRAY[j]);
	v_parkn := array_fill(0, ARRAY[j]);
	v_delayn := array_fill(0, ARRAY[j]);
	v_ord := ARRAY(SELECT u.i FROM unnest(v_tags, v_seqs) WITH ORDINALITY AS u(tag, seq, i)
		WHERE u.tag IS NOT NULL ORDER BY u.tag, u.seq);
	WHILE cardinality(owners) < p_n LOOP
		-- A queue out of the claim, or of a model that is, leaves the order here.
		WHILE cardinality(v_ord) > 0 AND NOT (v_live[v_ord[1]] AND v_mlive[q_model[v_ord[1]]]) LOOP
			v_ord := v_ord[2:];
		END LOOP;
		EXIT WHEN cardinality(v_ord) = 0;
		b := v_ord[1];
		nb := v_ord[2];
		mi := q_model[b];
		IF NOT v_seen[mi] THEN -- its cap and rate, once
			v_seen[mi] := true;
			j := array_position(p_models, v_models[mi]);
			IF coalesce(p_caps[j], 0) > 0 OR coalesce(p_rates[j], 0) > 0 THEN
				v_room[mi] := {schema}.model_room(v_models[mi], p_now, coalesce(p_caps[j], 0), coalesce(p_rates[j], 0));
				IF v_room[mi] = 0 THEN
					v_mlive[mi] := false;
					CONTINUE;
				END IF;
				v_rate[mi] := coalesce(p_rates[j], 0);
			END IF;
		END IF;
		c := v_curs[b];
		IF c IS NULL THEN
			IF q_owner[b] IS NULL THEN
				OPEN c NO SCROLL FOR SELECT p.ctid, p.id, p.owner, p.tag, p.seq, p.run_after <= p_now, p.started_at IS NULL
					FROM {schema}.tasks p
					WHERE p.status = 'pending' AND NOT p.parked AND NOT p.delayed AND p.model = v_models[mi]
					ORDER BY p.tag, p.seq
					FOR UPDATE SKIP LOCKED;
			ELSE
				OPEN c NO SCROLL FOR SELECT p.ctid, p.id, p.owner, p.tag, p.seq, p.run_after <= p_now, p.started_at IS NULL
					FROM {schema}.tasks p
					WHERE p.status = 'pending' AND p.parked AND p.model = v_models[mi] AND p.owner = q_owner[b]
					ORDER BY p.tag, p.seq
					FOR UPDATE SKIP LOCKED;
			END IF;
			v_curs[b] := c;
		END IF;
		WHILE cardinality(owners) < p_n LOOP
			IF v_heads[b] IS NOT NULL THEN
				v_id := v_heads[b];
				v_tid := v_head_tids[b];
				v_owner := v_head_owners[b];
				v_first := v_head_firsts[b];
				v_heads[b] := NULL;
				v_at_tag := v_tags[b];
				v_at_seq := v_seqs[b];
			ELSE
				FETCH c INTO v_tid, v_id, v_owner, v_tag, v_seq, v_ready, v_first;
				IF NOT FOUND THEN
					v_live[b] := false;
					IF q_owner[b] IS NOT NULL THEN -- a parked queue read to its end: maybe empty
						v_gone_models := v_gone_models || v_models[mi];
						v_gone_owners := v_gone_owners || q_owner[b];
					END IF;
					EXIT;
				END IF;
				v_at_tag := v_tag;
				v_at_seq := v_seq;
				IF NOT v_ready THEN
					IF q_owner[b] IS NULL THEN -- a model's queue: set aside, uncounted
						v_delay_tids := v_delay_tids || v_tid;
						v_delayn[b] := v_delayn[b] + 1;
						IF v_delayn[b] >= 1024 THEN -- sets aside no more: the next claim goes on from here
							v_live[b] := false;
							EXIT;
						END IF;
						CONTINUE;
					END IF;
					v_left[b] := v_left[b] - 1;
					IF v_left[b] < 0 THEN
						v_live[b] := false;
						EXIT;
					END IF;
					CONTINUE;
				END IF;
				IF nb IS NOT NULL AND (v_tag, v_seq) > (v_tags[nb], v_seqs[nb]) THEN
					v_heads[b] := v_id;
					v_head_tids[b] := v_tid;
					v_head_owners[b] := v_owner;
					v_head_firsts[b] := v_first;
					v_tags[b] := v_tag;
					v_seqs[b] := v_seq;
					EXIT;
				END IF;
			END IF;
			IF q_owner[b] IS NOT NULL THEN
				-- A parked queue leaves the claim once its owner is at its cap.
				IF p_owner_cap > 0 AND (v_owner = ANY (v_held)
						OR {schema}.held_reason(v_owner, v_models[mi], p_now, p_owner_cap, 0, 0, false, true) IS NOT NULL) THEN
					IF NOT v_owner = ANY (v_held) THEN
						v_held := v_held || v_owner;
					END IF;
					v_live[b] := false;
					EXIT;
				END IF;
			ELSE
				-- A model's queue: a task whose owner is at its cap, or is
				-- parked in the model and not merged, is parked.
				v_park := p_owner_cap > 0 AND v_owner = ANY (v_held);
				j := NULL;
				IF NOT v_park AND v_parked[mi] THEN
					v_key := mi || '/' || v_owner;
					j := array_position(v_pkeys, v_key);
					IF j IS NULL THEN -- not looked at: parked only if the model has more
						v_state := 'none';
						IF v_more[mi] AND EXISTS (SELECT 1 FROM {schema}.parked_owners o
								WHERE o.model = v_models[mi] AND o.owner = v_owner) THEN
							v_state := 'parked';
						END IF;
						v_pkeys := v_pkeys || v_key;
						v_pstate := v_pstate || v_state;
						j := cardinality(v_pkeys);
					END IF;
					v_park := v_pstate[j] IN ('parked', 'park', 'skip');
				END IF;
				IF NOT v_park AND p_owner_cap > 0
						AND {schema}.held_reason(v_owner, v_models[mi], p_now, p_owner_cap, 0, 0, false, true) IS NOT NULL THEN
					v_held := v_held || v_owner;
					v_park := true;
				END IF;
				IF v_park THEN
					IF j IS NULL THEN
						v_key := mi || '/' || v_owner;
						j := array_position(v_pkeys, v_key);
						IF j IS NULL THEN
							v_pkeys := v_pkeys || v_key;
							v_pstate := v_pstate || 'parked'::text;
							j := cardinality(v_pkeys);
						END IF;
					END IF;
					IF v_pstate[j] NOT IN ('park', 'skip') THEN -- the owner's first task met here
						IF NOT v_owner = ANY (v_counted) THEN -- an owner counts once
							v_counted := v_counted || v_owner;
							v_left[b] := v_left[b] - 1;
							IF v_left[b] < 0 THEN
								v_live[b] := false;
								EXIT;
							END IF;
						END IF;
						IF pg_try_advisory_xact_lock(hashtext('{schema}'), hashtext('p:' || v_models[mi] || '/' || v_owner)) THEN
							v_pstate[j] := 'park';
							v_park_models := v_park_models || v_models[mi];
							v_park_owners := v_park_owners || v_owner;
						ELSE
							v_pstate[j] := 'skip';
						END IF;
					END IF;
					IF v_pstate[j] = 'park' THEN
						v_park_tids := v_park_tids || v_tid;
						v_parkn[b] := v_parkn[b] + 1;
						IF v_parkn[b] >= 1024 THEN -- parks no more: the next claim goes on from here
							v_live[b] := false;
							EXIT;
						END IF;
						CONTINUE;
					END IF;
					-- Another claim parks the owner's tasks of the model: the
					-- model's queue read again from past this task without the
					-- tasks of such owners, which the scan's filter passes over
					-- before the rows are locked (as version 25 passed over
					-- those of the owners at their caps).
					CLOSE c;
					v_excl := ARRAY(SELECT substr(u.x, length(mi::text) + 2) FROM unnest(v_pkeys, v_pstate) AS u(x, st)
						WHERE u.st = 'skip' AND starts_with(u.x, mi || '/'));
					OPEN c NO SCROLL FOR SELECT p.ctid, p.id, p.owner, p.tag, p.seq, p.run_after <= p_now, p.started_at IS NULL
						FROM {schema}.tasks p
						WHERE p.status = 'pending' AND NOT p.parked AND NOT p.delayed AND p.model = v_models[mi]
							AND (p.tag, p.seq) > (v_at_tag, v_at_seq) AND p.owner <> ALL (v_excl)
						ORDER BY p.tag, p.seq
						FOR UPDATE SKIP LOCKED;
					v_curs[b] := c;
					CONTINUE;
				END IF;
			END IF;
			UPDATE {schema}.tasks SET status = 'processing', parked = false, attempt = attempt + 1,
				started_at = coalesce(started_at, p_now), lease_until = p_now + p_lease, updated_at = p_now, progress = 0
			WHERE id = v_id RETURNING * INTO t;
			owners := owners || t.owner;
			IF v_first AND t.callback_url <> '' AND {schema}.wants(t.callback_events, 'processing') THEN
				INSERT INTO {schema}.webhooks (id, task_id, event, due) VALUES (t.id || ':processing', t.id, 'processing', p_now)
					ON CONFLICT (id) DO NOTHING;
			END IF;
			RETURN NEXT t;
			IF v_rate[mi] > 0 THEN
				UPDATE {schema}.models SET next_start = greatest(coalesce(next_start, p_now), p_now) + interval '1 minute' / v_rate[mi]
					WHERE model = v_models[mi] RETURNING next_start INTO v_next;
				IF v_next > p_now THEN
					v_mlive[mi] := false;
				END IF;
			END IF;
			IF v_room[mi] IS NOT NULL THEN
				v_room[mi] := v_room[mi] - 1;
				IF v_room[mi] <= 0 THEN
					v_mlive[mi] := false;
				END IF;
			END IF;
			EXIT WHEN NOT v_mlive[mi];
		END LOOP;
		IF v_live[b] AND v_mlive[mi] THEN -- its next task comes after nb's: b back in its place
			v_ord := {schema}.merge_reorder(v_ord, v_tags, v_seqs);
		ELSE
			v_ord := v_ord[2:];
		END IF;
	END LOOP;
	FOR i IN 1 .. cardinality(q_model) LOOP
		c := v_curs[i];
		IF c IS NOT NULL THEN
			CLOSE c;
		END IF;
	END LOOP;
	IF cardinality(v_delay_tids) > 0 THEN
		-- The rows are locked (the cursors').
		PERFORM {schema}.set_delayed(v_delay_tids, true);
	END IF;
	IF cardinality(v_park_tids) > 0 THEN
		-- The rows are locked (the cursors'); the owners' records made
		-- under their locks p:, so no other claim takes them out meanwhile.
		PERFORM {schema}.set_parked(v_park_tids);
		INSERT INTO {schema}.parked_owners (model, owner, looked_at)
		SELECT u.m, u.o, p_now FROM unnest(v_park_models, v_park_owners) AS u(m, o)
		WHERE NOT EXISTS (SELECT 1 FROM {schema}.parked_owners x WHERE x.model = u.m AND x.owner = u.o);
	END IF;
	-- A parked queue found empty loses its owner's record, under the lock
	-- p: (one a claim parking the owner holds) and if no parked task is
	-- left (another claim may hold some); a row another claim is noting
	-- as looked at stays, for a later claim to take out.
	FOR i IN 1 .. cardinality(v_gone_models) LOOP
		IF pg_try_advisory_xact_lock(hashtext('{schema}'), hashtext('p:' || v_gone_models[i] || '/' || v_gone_owners[i])) THEN
			DELETE FROM {schema}.parked_owners o WHERE o.ctid = ANY (ARRAY(SELECT x.ctid FROM {schema}.parked_owners x
					WHERE x.model = v_gone_models[i] AND x.owner = v_gone_owners[i] FOR UPDATE SKIP LOCKED))
				AND NOT EXISTS (SELECT 1 FROM {schema}.tasks p WHERE p.status = 'pending' AND p.parked
					AND p.model = v_gone_models[i] AND p.owner = v_gone_owners[i]);
		END IF;
	END LOOP;
	IF cardinality(owners) > 0 THEN
		INSERT INTO {schema}.pending_moves (owner, d) SELECT o, -count(*) FROM unnest(owners) o GROUP BY o;
	END IF;
END $$;

-- claim_free as version 27 made it, the tasks it sets aside flagged by
-- set_delayed, those it takes by take_tasks.
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
	-- more tasks it may set aside. v_live[i] is false once it is out of
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
	v_tids tid[] := '{}';
	v_delay tid[] := '{}'; -- the tasks to set aside
	v_hooks tid[] := '{}';
	v_parked boolean[];
BEGIN
	PERFORM set_config('synchronous_commit', 'off', true);
	PERFORM set_config('imagegen.moves_noted', 'on', true);
	PERFORM {schema}.undelay(p_now);
	-- The loose scan: each model's head, paused models left out.
	SELECT h.models, h.tags, h.seqs, h.parked INTO v_models, v_tags, v_seqs, v_parked FROM {schema}.model_heads(p_now) h;
	k := cardinality(v_models);
	IF k = 0 THEN
		RETURN;
	END IF;
	IF true = ANY (v_parked) THEN
		-- Parked owners (not paused): claim_tasks merges their parked
		-- queues, every one it looks at (no owner cap).
		RETURN QUERY SELECT * FROM {schema}.claim_tasks(p_now, p_lease, p_n, p_scan, 0, '{}', '{}', '{}');
		RETURN;
	END IF;
	IF k = 1 THEN
		-- One model (the common case): its queue alone, walked as version
		-- 17 walked the one queue, without the merge's bookkeeping.
		OPEN c NO SCROLL FOR SELECT p.ctid, p.run_after <= p_now,
				p.started_at IS NULL AND p.callback_url <> '' AND {schema}.wants(p.callback_events, 'processing')
			FROM {schema}.tasks p
			WHERE p.status = 'pending' AND NOT p.parked AND NOT p.delayed AND p.model = v_models[1]
			ORDER BY p.tag, p.seq
			FOR UPDATE SKIP LOCKED;
		WHILE cardinality(v_tids) < p_n LOOP
			FETCH c INTO v_tid, v_ready, v_hook;
			EXIT WHEN NOT FOUND;
			IF NOT v_ready THEN
				v_delay := v_delay || v_tid;
				EXIT WHEN cardinality(v_delay) >= 1024; -- the next claim goes on from here
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
		v_left := array_fill(1024, ARRAY[k]);
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
					WHERE p.status = 'pending' AND NOT p.parked AND NOT p.delayed AND p.model = v_models[b]
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
					v_delay := v_delay || v_tid;
					v_left[b] := v_left[b] - 1;
					IF v_left[b] <= 0 THEN
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
	IF cardinality(v_delay) > 0 THEN
		-- The rows are locked (the cursors').
		PERFORM {schema}.set_delayed(v_delay, true);
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
	RETURN QUERY SELECT * FROM {schema}.take_tasks(v_tids, p_now, p_lease);
END $$;
