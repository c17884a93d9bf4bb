-- Back to version 16: claim_free as version 14 wrote it.
CREATE OR REPLACE FUNCTION {schema}.claim_free(p_now timestamptz, p_lease interval, p_n integer)
RETURNS SETOF {schema}.tasks
LANGUAGE plpgsql AS $$
DECLARE
	head NO SCROLL CURSOR FOR SELECT p.id, p.started_at IS NULL FROM {schema}.tasks p
		WHERE p.status = 'pending' AND p.run_after <= p_now
			AND NOT EXISTS (SELECT 1 FROM {schema}.models m WHERE m.model = p.model AND m.paused_until > p_now)
		ORDER BY p.tag, p.seq
		FOR UPDATE SKIP LOCKED;
	v_id text;
	v_first boolean;
	v_ids text[] := '{}';
	v_firsts text[] := '{}';
BEGIN
	PERFORM set_config('synchronous_commit', 'off', true);
	PERFORM set_config('imagegen.moves_noted', 'on', true);
	OPEN head;
	WHILE cardinality(v_ids) < p_n LOOP
		FETCH head INTO v_id, v_first;
		EXIT WHEN NOT FOUND;
		v_ids := v_ids || v_id;
		IF v_first THEN
			v_firsts := v_firsts || v_id;
		END IF;
	END LOOP;
	CLOSE head;
	IF cardinality(v_ids) = 0 THEN
		RETURN;
	END IF;
	RETURN QUERY WITH claimed AS (
		UPDATE {schema}.tasks t
		SET status = 'processing', attempt = t.attempt + 1, started_at = coalesce(t.started_at, p_now),
			lease_until = p_now + p_lease, updated_at = p_now, progress = 0
		WHERE t.id = ANY (v_ids)
		RETURNING t.*
	), hooks AS (
		INSERT INTO {schema}.webhooks (id, task_id, event, due)
		SELECT c.id || ':processing', c.id, 'processing', p_now FROM claimed c
		WHERE c.id = ANY (v_firsts) AND c.callback_url <> '' AND {schema}.wants(c.callback_events, 'processing')
		ON CONFLICT (id) DO NOTHING
	), moves AS (
		INSERT INTO {schema}.pending_moves (owner, d) SELECT c.owner, -count(*) FROM claimed c GROUP BY c.owner
	)
	SELECT * FROM claimed c ORDER BY c.tag, c.seq;
END $$;
ALTER FUNCTION {schema}.claim_free(timestamptz, interval, integer) RESET ALL;
