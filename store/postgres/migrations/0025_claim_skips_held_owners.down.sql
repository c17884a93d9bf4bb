-- Back to version 24: claim_tasks as version 24 made it, its cursor
-- reading (and locking) every task of an owner at its cap as it passes.
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
			ELSE
				FETCH c INTO v_id, v_owner, v_tag, v_seq, v_ready, v_first;
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

