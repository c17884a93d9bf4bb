-- Back to version 12: submit_tasks creates a batch's tasks one statement
-- at a time.

CREATE OR REPLACE FUNCTION {schema}.submit_tasks(p_ids text[], p_owners text[], p_requests text[], p_models text[],
	p_costs bigint[], p_callbacks text[], p_events text[], p_request_ids text[], p_max_pending integer[],
	p_now timestamptz, OUT code integer[], OUT balance bigint[])
LANGUAGE plpgsql AS $$
DECLARE
	b bigint;
	n bigint;
	v bigint;
	w integer;
	pending bigint;
	moved bigint;
	folded text;
BEGIN
	code := '{}';
	balance := '{}';
	v := {schema}.vtime(p_now);
	FOR i IN 1 .. coalesce(cardinality(p_ids), 0) LOOP
		UPDATE {schema}.accounts a SET balance = a.balance - p_costs[i], entries = a.entries + 1, pending = a.pending + 1
			WHERE a.owner = p_owners[i] AND a.balance >= p_costs[i]
			RETURNING a.balance, a.entries, a.pending, a.weight INTO b, n, pending, w;
		IF NOT FOUND THEN
			SELECT a.balance INTO b FROM {schema}.accounts a WHERE a.owner = p_owners[i];
			code := code || 0;
			balance := balance || coalesce(b, 0);
			CONTINUE;
		END IF;
		-- The account row is locked: this transaction alone folds the
		-- owner's moves, and the count cannot move meanwhile.
		IF folded IS DISTINCT FROM p_owners[i] THEN
			folded := p_owners[i];
			WITH m AS (DELETE FROM {schema}.pending_moves WHERE owner = p_owners[i] RETURNING d)
			SELECT coalesce(sum(d), 0) INTO moved FROM m;
			IF moved <> 0 THEN
				UPDATE {schema}.accounts a SET pending = a.pending + moved WHERE a.owner = p_owners[i]
					RETURNING a.pending INTO pending;
			END IF;
		END IF;
		-- pending counts this task: the others are pending - 1.
		IF p_max_pending[i] > 0 AND pending - 1 >= p_max_pending[i] THEN
			UPDATE {schema}.accounts a SET balance = a.balance + p_costs[i], entries = a.entries - 1, pending = a.pending - 1
				WHERE a.owner = p_owners[i] RETURNING a.balance INTO b;
			code := code || -2;
			balance := balance || b;
			CONTINUE;
		END IF;
		INSERT INTO {schema}.tasks (id, owner, request, model, cost, status, run_after, callback_url, callback_events,
				request_id, created_at, updated_at, tag)
			VALUES (p_ids[i], p_owners[i], p_requests[i]::jsonb, p_models[i], p_costs[i], 'pending', p_now,
				p_callbacks[i], p_events[i], p_request_ids[i], p_now, p_now,
				greatest(v, coalesce((SELECT t.tag FROM {schema}.tasks t WHERE t.owner = p_owners[i] AND t.status = 'pending'
					ORDER BY t.tag DESC LIMIT 1), v)) + 1000 / w)
			ON CONFLICT (id) DO NOTHING;
		IF NOT FOUND THEN
			UPDATE {schema}.accounts a SET balance = a.balance + p_costs[i], entries = a.entries - 1, pending = a.pending - 1
				WHERE a.owner = p_owners[i] RETURNING a.balance INTO b;
			code := code || -1;
			balance := balance || b;
			CONTINUE;
		END IF;
		INSERT INTO {schema}.ledger (owner, n, kind, amount, ref, at, balance_after)
			VALUES (p_owners[i], n, 'charge', -p_costs[i], 'task:' || p_ids[i], p_now, b);
		code := code || 1;
		balance := balance || b;
	END LOOP;
END $$;
