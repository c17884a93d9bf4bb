-- Back to version 27: tasks are tagged from vtime alone again
-- (submit_tasks as version 16 made it, copied from its migration), and
-- model_base goes. Processes of version 28 must not run against the
-- schema after this.

DROP FUNCTION {schema}.model_base(text, bigint);

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
			INSERT INTO {schema}.tasks (id, owner, request, model, cost, status, run_after, callback_url, callback_events,
					request_id, created_at, updated_at, tag)
				VALUES (p_ids[i], o, p_requests[i]::jsonb, p_models[i], p_costs[i], 'pending', p_now,
					p_callbacks[i], p_events[i], p_request_ids[i], p_now, p_now,
					greatest(v, coalesce((SELECT t.tag FROM {schema}.tasks t WHERE t.owner = o AND t.status = 'pending'
						ORDER BY t.tag DESC LIMIT 1), v)) + 1000 / w)
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
				made := made || k;
			END IF;
			balance[k] := b;
		END LOOP;
		IF cardinality(made) > 0 THEN
			INSERT INTO {schema}.tasks (id, owner, request, model, cost, status, run_after, callback_url, callback_events,
					request_id, created_at, updated_at, tag)
				SELECT p_ids[x], o, p_requests[x]::jsonb, p_models[x], p_costs[x], 'pending', p_now,
					p_callbacks[x], p_events[x], p_request_ids[x], p_now, p_now,
					greatest(v, coalesce((SELECT t.tag FROM {schema}.tasks t WHERE t.owner = o AND t.status = 'pending'
						ORDER BY t.tag DESC LIMIT 1), v)) + r * (1000 / w)
				FROM unnest(made) WITH ORDINALITY AS u(x, r)
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
