-- imagegen store, version 29: vtime reads every head it needs through a
-- cursor, which PostgreSQL plans for its first rows, as version 15 did
-- and model_base does (version 28): the same answer, and the plans an
-- index walk in order whatever the statistics were when a session first
-- ran them.
--
-- Version 27's vtime read the head of each model's queue, and the first
-- parked task and the first delayed retry, with SELECT ... ORDER BY
-- ... LIMIT 1. PL/pgSQL keeps a statement's plan for the session: a
-- statement without parameters (the first model's head, the parked and
-- delayed heads) is planned once, generically, at its first call, and
-- the next model's head (p.model > the last) generically from its sixth
-- call on. On a young table without statistics, at a couple of hundred
-- tasks, PostgreSQL expects one pending task (the default selectivity
-- of status = 'pending') and planned both model heads as a scan of
-- tasks_owner_pending (every pending task) and a sort, costed the same
-- as the walk of tasks_model_fair; every later call in the session then
-- read and sorted the whole queue, twice (0.3 to 3 ms a call at 20,000
-- pending tasks, most of a batch of submits in the bench module, and
-- most of its noise: which plan a connection kept depended on when it
-- first submitted). The parked and delayed heads were planned on their
-- own indexes there, but by the same costs, with nothing to keep them.
--
-- A cursor is planned for its first rows (cursor_tuple_fraction): a
-- walk of the index in the cursor's order starts at once, a sort only
-- after reading everything, so the walk is chosen however few tasks
-- PostgreSQL expects; each head is the cursor's first row. The next
-- model's head is a cursor of its own, with the last model as its
-- argument. What vtime computes is unchanged: the larger of the largest
-- running tag and one turn of weight 1 before the ready head (the head
-- when no task is ready), else 0; the heads of the models' queues, the
-- first parked task and the first delayed retry as version 27 read
-- them, and the queues whose heads are not ready walked as before.
CREATE OR REPLACE FUNCTION {schema}.vtime(p_now timestamptz) RETURNS bigint
LANGUAGE plpgsql STABLE AS $$
DECLARE
	-- The first model's head, and the next one's after p_after.
	first_head NO SCROLL CURSOR FOR SELECT p.model, p.tag, p.run_after FROM {schema}.tasks p
		WHERE p.status = 'pending' AND NOT p.parked AND NOT p.delayed ORDER BY p.model, p.tag, p.seq;
	next_head NO SCROLL CURSOR (p_after text) FOR SELECT p.model, p.tag, p.run_after FROM {schema}.tasks p
		WHERE p.status = 'pending' AND NOT p.parked AND NOT p.delayed AND p.model > p_after ORDER BY p.model, p.tag, p.seq;
	parked_head NO SCROLL CURSOR FOR SELECT p.tag, p.run_after FROM {schema}.tasks p
		WHERE p.status = 'pending' AND p.parked ORDER BY p.tag, p.seq;
	delayed_head NO SCROLL CURSOR FOR SELECT p.tag, p.run_after FROM {schema}.tasks p
		WHERE p.status = 'pending' AND p.delayed ORDER BY p.tag, p.seq;
	walk refcursor;
	v bigint;
	v_head bigint;
	v_first bigint;
	v_model text;
	v_tag bigint;
	v_run_after timestamptz;
	v_found boolean;
	v_waiting text[] := '{}';
	v_waiting_tags bigint[] := '{}';
	v_parked_tag bigint; -- the first parked task's, when it is not ready
BEGIN
	v := (SELECT max(tag) FROM {schema}.tasks WHERE status = 'processing');
	OPEN first_head;
	FETCH first_head INTO v_model, v_tag, v_run_after;
	v_found := FOUND;
	CLOSE first_head;
	WHILE v_found LOOP
		v_first := least(v_first, v_tag);
		IF v_run_after <= p_now THEN
			v_head := least(v_head, v_tag);
		ELSE
			v_waiting := v_waiting || v_model;
			v_waiting_tags := v_waiting_tags || v_tag;
		END IF;
		OPEN next_head(v_model);
		FETCH next_head INTO v_model, v_tag, v_run_after;
		v_found := FOUND;
		CLOSE next_head;
	END LOOP;
	OPEN parked_head;
	FETCH parked_head INTO v_tag, v_run_after;
	v_found := FOUND;
	CLOSE parked_head;
	IF v_found THEN
		v_first := least(v_first, v_tag);
		IF v_run_after <= p_now THEN
			v_head := least(v_head, v_tag);
		ELSE
			v_parked_tag := v_tag;
		END IF;
	END IF;
	OPEN delayed_head;
	FETCH delayed_head INTO v_tag, v_run_after;
	v_found := FOUND;
	CLOSE delayed_head;
	IF v_found THEN
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
