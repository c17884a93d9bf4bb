-- imagegen store, version 28: a task queued for a model held back while
-- other models ran (paused, at its cap, waiting for its rate) is tagged
-- from that model's queue, not from how far the others ran
-- (storekit.QueueBase, as the memory and Redis stores tag it).
--
-- A task queued (submitted, or given back by a retry, a release, a
-- recovery or a requeue) is tagged next_tag(owner, base): after its
-- owner's last pending task, or base, one turn on. Until now base was
-- vtime, which follows the running tasks: while a model is held back
-- and the others run, vtime moves far past the tags of the held
-- model's backlog, and an owner's first task there was tagged after all
-- of it, so it waited for the whole backlog once the hold ended
-- (storetest's PausedModelNewcomerWaitsOneTurn and its Capped and Rated
-- twins). base is now model_base(model, vtime): when the model's queue
-- (its pending tasks neither parked nor delayed, tasks_model_fair) has
-- a head below vtime, one less than the head's tag, so that the
-- newcomer waits behind one turn of the owners queued there; otherwise
-- vtime, as before. It is one index probe of tasks_model_fair.
--
-- submit_tasks reads vtime once a batch, as before, and model_base once
-- for each model the batch creates tasks of (the first time it creates
-- one), not once a task: the tasks a batch inserts never come before
-- the head it read (each is tagged at least a turn past base), so a
-- second probe would answer the same. An owner's run of several tasks
-- of models whose bases differ is tagged as the same tasks submitted
-- one after another would be: the k-th (from 1) gets
--   k * stride + greatest(last, max over j <= k of (base_j - (j - 1) * stride))
-- (last: the owner's last pending tag before the run), which is the
-- run's tags of version 16 when every base is the same.
--
-- The store's retries, releases, recoveries and requeues write
-- next_tag(owner, model_base(model, vtime(now))). next_tag and vtime
-- keep their signatures and definitions, and submit_tasks its
-- signature, so processes of version 27 run against this schema while
-- a deployment rolls: their submits take the new rule (they call
-- submit_tasks), their retries, releases, recoveries and requeues the
-- old one (vtime alone), which only puts such a task further back.

-- model_base is the virtual time a task queued for p_model is tagged
-- from, p_v the store's (vtime): one less than the tag at the head of
-- the model's queue when that is below p_v, else p_v. The head is read
-- through a cursor, which PostgreSQL plans for its first rows (as vtime
-- did from version 15): the same query with LIMIT 1, once its generic
-- plan was made on a young table without statistics (a couple of
-- hundred tasks), kept a scan of the owners' pending tasks and a sort
-- of them for the session, every probe reading the whole queue (2 to
-- 3.5 ms a batch of submits at 20,000 tasks, the bench module's).
CREATE FUNCTION {schema}.model_base(p_model text, p_v bigint) RETURNS bigint
LANGUAGE plpgsql STABLE AS $$
DECLARE
	head NO SCROLL CURSOR FOR SELECT p.tag FROM {schema}.tasks p
		WHERE p.status = 'pending' AND NOT p.parked AND NOT p.delayed AND p.model = p_model ORDER BY p.tag, p.seq;
	v_head bigint;
BEGIN
	OPEN head;
	FETCH head INTO v_head;
	CLOSE head;
	IF v_head < p_v THEN -- NULL (an empty queue) is not
		RETURN v_head - 1;
	END IF;
	RETURN p_v;
END $$;

-- submit_tasks as version 16 made it, each task tagged from its
-- model's base (model_base, read once a model a batch: bm, bb) instead
-- of vtime, and a run's tags from its floors (see above).
CREATE OR REPLACE FUNCTION {schema}.submit_tasks(p_ids text[], p_owners text[], p_requests text[], p_models text[],
	p_costs bigint[], p_callbacks text[], p_events text[], p_request_ids text[], p_max_pending integer[],
	p_now timestamptz, OUT code integer[], OUT balance bigint[])
LANGUAGE plpgsql AS $$
DECLARE
	total integer := coalesce(cardinality(p_ids), 0);
	v bigint;
	i integer := 1;
	j integer;
	k integer;
	o text;
	b bigint;
	n bigint;
	n0 bigint;
	w integer;
	pend bigint;
	moved bigint;
	taken text[];
	made integer[];
	bm text[] := '{}'; -- the models whose base the batch read (model_base)
	bb bigint[] := '{}'; -- their bases
	bi integer; -- the model's place in bm
	vb bigint; -- the base of the task in hand
	fl bigint; -- a run's floor so far (see above)
	floors bigint[]; -- the floor of each task of the run it creates
BEGIN
	code := '{}';
	balance := '{}';
	IF total = 0 THEN
		RETURN;
	END IF;
	code := array_fill(0, ARRAY[total]);
	balance := array_fill(0::bigint, ARRAY[total]);
	v := {schema}.vtime(p_now);
	WHILE i <= total LOOP
		o := p_owners[i];
		j := i;
		WHILE j < total AND p_owners[j + 1] = o LOOP
			j := j + 1;
		END LOOP;

		IF j = i THEN
			-- One task: version 12's statements.
			UPDATE {schema}.accounts a SET balance = a.balance - p_costs[i], entries = a.entries + 1, pending = a.pending + 1
				WHERE a.owner = o AND a.balance >= p_costs[i]
				RETURNING a.balance, a.entries, a.pending, a.weight INTO b, n, pend, w;
			IF NOT FOUND THEN
				SELECT a.balance INTO b FROM {schema}.accounts a WHERE a.owner = o;
				balance[i] := coalesce(b, 0);
				i := j + 1;
				CONTINUE;
			END IF;
			WITH m AS (DELETE FROM {schema}.pending_moves WHERE owner = o RETURNING d)
			SELECT coalesce(sum(d), 0) INTO moved FROM m;
			IF moved <> 0 THEN
				UPDATE {schema}.accounts a SET pending = a.pending + moved WHERE a.owner = o RETURNING a.pending INTO pend;
			END IF;
			IF p_max_pending[i] > 0 AND pend - 1 >= p_max_pending[i] THEN
				UPDATE {schema}.accounts a SET balance = a.balance + p_costs[i], entries = a.entries - 1, pending = a.pending - 1
					WHERE a.owner = o RETURNING a.balance INTO b;
				code[i] := -2;
				balance[i] := b;
				i := j + 1;
				CONTINUE;
			END IF;
			bi := array_position(bm, p_models[i]);
			IF bi IS NULL THEN -- the model's first task in the batch
				bm := bm || p_models[i];
				bb := bb || {schema}.model_base(p_models[i], v);
				bi := cardinality(bm);
			END IF;
			vb := bb[bi];
			INSERT INTO {schema}.tasks (id, owner, request, model, cost, status, run_after, callback_url, callback_events,
					request_id, created_at, updated_at, tag)
				VALUES (p_ids[i], o, p_requests[i]::jsonb, p_models[i], p_costs[i], 'pending', p_now,
					p_callbacks[i], p_events[i], p_request_ids[i], p_now, p_now,
					greatest(vb, coalesce((SELECT t.tag FROM {schema}.tasks t WHERE t.owner = o AND t.status = 'pending'
						ORDER BY t.tag DESC LIMIT 1), vb)) + 1000 / w)
				ON CONFLICT (id) DO NOTHING;
			IF NOT FOUND THEN
				UPDATE {schema}.accounts a SET balance = a.balance + p_costs[i], entries = a.entries - 1, pending = a.pending - 1
					WHERE a.owner = o RETURNING a.balance INTO b;
				code[i] := -1;
				balance[i] := b;
				i := j + 1;
				CONTINUE;
			END IF;
			INSERT INTO {schema}.ledger (owner, n, kind, amount, ref, at, balance_after)
				VALUES (o, n, 'charge', -p_costs[i], 'task:' || p_ids[i], p_now, b);
			code[i] := 1;
			balance[i] := b;
			i := j + 1;
			CONTINUE;
		END IF;

		-- A run of several tasks of o: lock the account row, fold the
		-- owner's moves, and walk the run.
		SELECT a.balance, a.entries, a.pending, a.weight INTO b, n, pend, w
			FROM {schema}.accounts a WHERE a.owner = o FOR UPDATE;
		IF NOT FOUND THEN
			i := j + 1; -- code 0, balance 0
			CONTINUE;
		END IF;
		WITH m AS (DELETE FROM {schema}.pending_moves WHERE owner = o RETURNING d)
		SELECT coalesce(sum(d), 0) INTO moved FROM m;
		pend := pend + moved;
		n0 := n;
		taken := '{}';
		made := '{}';
		fl := NULL;
		floors := '{}';
		FOR k IN i .. j LOOP
			IF b < p_costs[k] THEN
				code[k] := 0;
			ELSIF p_max_pending[k] > 0 AND pend >= p_max_pending[k] THEN
				code[k] := -2;
			ELSIF p_ids[k] = ANY (taken) THEN -- a second submit of an id in the run
				code[k] := -1;
			ELSE
				b := b - p_costs[k];
				pend := pend + 1;
				n := n + 1;
				code[k] := 1;
				taken := taken || p_ids[k];
				bi := array_position(bm, p_models[k]);
				IF bi IS NULL THEN -- the model's first task in the batch
					bm := bm || p_models[k];
					bb := bb || {schema}.model_base(p_models[k], v);
					bi := cardinality(bm);
				END IF;
				vb := bb[bi];
				fl := greatest(fl, vb - cardinality(made) * (1000 / w));
				floors := floors || fl;
				made := made || k;
			END IF;
			balance[k] := b;
		END LOOP;
		IF cardinality(made) > 0 THEN
			INSERT INTO {schema}.tasks (id, owner, request, model, cost, status, run_after, callback_url, callback_events,
					request_id, created_at, updated_at, tag)
				SELECT p_ids[x], o, p_requests[x]::jsonb, p_models[x], p_costs[x], 'pending', p_now,
					p_callbacks[x], p_events[x], p_request_ids[x], p_now, p_now,
					greatest(f, coalesce((SELECT t.tag FROM {schema}.tasks t WHERE t.owner = o AND t.status = 'pending'
						ORDER BY t.tag DESC LIMIT 1), f)) + r * (1000 / w)
				FROM unnest(made, floors) WITH ORDINALITY AS u(x, f, r)
				ORDER BY r;
			INSERT INTO {schema}.ledger (owner, n, kind, amount, ref, at, balance_after)
				SELECT o, n0 + r, 'charge', -p_costs[x], 'task:' || p_ids[x], p_now, balance[x]
				FROM unnest(made) WITH ORDINALITY AS u(x, r);
		END IF;
		IF cardinality(made) > 0 OR moved <> 0 THEN
			UPDATE {schema}.accounts a SET balance = b, entries = n, pending = pend WHERE a.owner = o;
		END IF;
		i := j + 1;
	END LOOP;
END $$;
