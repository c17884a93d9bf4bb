-- Back to version 28: vtime as version 27 defined it (copied from its
-- migration with its comment), each head read with SELECT ... LIMIT 1.
-- Processes of version 29 run against the schema after this: vtime
-- keeps its signature and its answer.

-- vtime as version 26 made it, the delayed retries counted where they
-- are: their first (tasks_delayed_fair) is one more head, ready only if
-- it is due; the ones behind it are taken as waiting (never walked: all
-- but those due and not yet given back by a claim are).
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
	v_parked_tag bigint; -- the first parked task's, when it is not ready
BEGIN
	v := (SELECT max(tag) FROM {schema}.tasks WHERE status = 'processing');
	SELECT p.model, p.tag, p.run_after INTO v_model, v_tag, v_run_after FROM {schema}.tasks p
		WHERE p.status = 'pending' AND NOT p.parked AND NOT p.delayed ORDER BY p.model, p.tag, p.seq LIMIT 1;
	WHILE FOUND LOOP
		v_first := least(v_first, v_tag);
		IF v_run_after <= p_now THEN
			v_head := least(v_head, v_tag);
		ELSE
			v_waiting := v_waiting || v_model;
			v_waiting_tags := v_waiting_tags || v_tag;
		END IF;
		SELECT p.model, p.tag, p.run_after INTO v_model, v_tag, v_run_after FROM {schema}.tasks p
			WHERE p.status = 'pending' AND NOT p.parked AND NOT p.delayed AND p.model > v_model ORDER BY p.model, p.tag, p.seq LIMIT 1;
	END LOOP;
	SELECT p.tag, p.run_after INTO v_tag, v_run_after FROM {schema}.tasks p
		WHERE p.status = 'pending' AND p.parked ORDER BY p.tag, p.seq LIMIT 1;
	IF FOUND THEN
		v_first := least(v_first, v_tag);
		IF v_run_after <= p_now THEN
			v_head := least(v_head, v_tag);
		ELSE
			v_parked_tag := v_tag;
		END IF;
	END IF;
	SELECT p.tag, p.run_after INTO v_tag, v_run_after FROM {schema}.tasks p
		WHERE p.status = 'pending' AND p.delayed ORDER BY p.tag, p.seq LIMIT 1;
	IF FOUND THEN
		v_first := least(v_first, v_tag);
		IF v_run_after <= p_now THEN
			v_head := least(v_head, v_tag);
		END IF;
	END IF;
	FOR i IN 1 .. cardinality(v_waiting) LOOP
		CONTINUE WHEN v_waiting_tags[i] >= v_head;
		OPEN walk NO SCROLL FOR SELECT p.tag, p.run_after FROM {schema}.tasks p
			WHERE p.status = 'pending' AND NOT p.parked AND NOT p.delayed AND p.model = v_waiting[i] ORDER BY p.tag, p.seq;
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
	IF v_parked_tag IS NOT NULL AND (v_head IS NULL OR v_parked_tag < v_head) THEN
		OPEN walk NO SCROLL FOR SELECT p.tag, p.run_after FROM {schema}.tasks p
			WHERE p.status = 'pending' AND p.parked ORDER BY p.tag, p.seq;
		LOOP
			FETCH walk INTO v_tag, v_run_after;
			EXIT WHEN NOT FOUND OR v_tag >= v_head;
			IF v_run_after <= p_now THEN
				v_head := v_tag;
				EXIT;
			END IF;
		END LOOP;
		CLOSE walk;
	END IF;
	-- greatest passes over NULLs: either alone, or 0 when neither is.
	RETURN coalesce(greatest(v, coalesce(v_head, v_first) - 1000), 0);
END $$;
