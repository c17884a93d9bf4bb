-- Back to version 10: the pending cap counts the owner's pending tasks in
-- the index tasks_owner_pending.
CREATE OR REPLACE FUNCTION {schema}.submit_tasks(p_ids text[], p_owners text[], p_requests text[], p_models text[],
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

DROP TRIGGER tasks_pending_insert ON {schema}.tasks;
DROP TRIGGER tasks_pending_update ON {schema}.tasks;
DROP TRIGGER tasks_pending_delete ON {schema}.tasks;
DROP FUNCTION {schema}.pending_count(text);
DROP FUNCTION {schema}.note_pending_move();
DROP TABLE {schema}.pending_moves;
DROP TABLE {schema}.pending_counts;
