-- imagegen store, version 30: model_heads reads the models' heads
-- through cursors, which PostgreSQL plans for their first rows, as vtime
-- does since version 29 and model_base since 28: the same answer, and
-- the plans an index walk in order whatever the statistics were when a
-- session first ran them.
--
-- Every claim (claim_tasks, claim_free) starts with model_heads, whose
-- loose scan of tasks_model_fair read the head of the first model's
-- queue, then of each next model's, with SELECT ... ORDER BY p.model,
-- p.tag, p.seq LIMIT 1. PL/pgSQL keeps a statement's plan for the
-- session: the first model's head (no parameters) is planned once, at
-- the session's first claim, and the next model's head generically from
-- its sixth call on (from its first inside claim_free, which sets
-- plan_cache_mode = force_generic_plan for the statements it runs). On a
-- young table without statistics, at a couple of hundred tasks,
-- PostgreSQL expects one pending task and planned both as a scan of
-- tasks_owner_pending (every pending task) and a sort, from the very
-- first call: a session whose first claim came while the queue was
-- short then read and sorted the whole queue twice at every later
-- claim, however long the queue grew.
--
-- A cursor is planned for its first rows (cursor_tuple_fraction): the
-- walk of tasks_model_fair in the cursor's order starts at once, a sort
-- only after reading everything, so the walk is chosen however few
-- tasks PostgreSQL expects; each head is the cursor's first row. The
-- next model's head is a cursor of its own, with the last model as its
-- argument. The parked owners' loose scan (parked_owners, a small table
-- of its own, read through parked_owners_look) is as version 27 wrote
-- it. What model_heads returns is unchanged.
CREATE OR REPLACE FUNCTION {schema}.model_heads(p_now timestamptz, OUT models text[], OUT tags bigint[], OUT seqs bigint[],
	OUT parked boolean[])
LANGUAGE plpgsql STABLE AS $$
DECLARE
	-- The first model's head, and the next one's after p_after.
	first_head NO SCROLL CURSOR FOR SELECT p.model, p.tag, p.seq FROM {schema}.tasks p
		WHERE p.status = 'pending' AND NOT p.parked AND NOT p.delayed ORDER BY p.model, p.tag, p.seq;
	next_head NO SCROLL CURSOR (p_after text) FOR SELECT p.model, p.tag, p.seq FROM {schema}.tasks p
		WHERE p.status = 'pending' AND NOT p.parked AND NOT p.delayed AND p.model > p_after ORDER BY p.model, p.tag, p.seq;
	v_paused text[] := ARRAY(SELECT m.model FROM {schema}.models m WHERE m.paused_until > p_now);
	v_model text;
	v_tag bigint;
	v_seq bigint;
	v_found boolean;
	j integer;
BEGIN
	models := '{}';
	tags := '{}';
	seqs := '{}';
	parked := '{}';
	OPEN first_head;
	FETCH first_head INTO v_model, v_tag, v_seq;
	v_found := FOUND;
	CLOSE first_head;
	WHILE v_found LOOP
		IF NOT v_model = ANY (v_paused) THEN
			models := models || v_model;
			tags := tags || v_tag;
			seqs := seqs || v_seq;
			parked := parked || false;
		END IF;
		OPEN next_head(v_model);
		FETCH next_head INTO v_model, v_tag, v_seq;
		v_found := FOUND;
		CLOSE next_head;
	END LOOP;
	SELECT o.model INTO v_model FROM {schema}.parked_owners o ORDER BY o.model LIMIT 1;
	WHILE FOUND LOOP
		IF NOT v_model = ANY (v_paused) THEN
			j := array_position(models, v_model);
			IF j IS NULL THEN
				models := models || v_model;
				tags := tags || NULL::bigint;
				seqs := seqs || NULL::bigint;
				parked := parked || true;
			ELSE
				parked[j] := true;
			END IF;
		END IF;
		SELECT o.model INTO v_model FROM {schema}.parked_owners o WHERE o.model > v_model ORDER BY o.model LIMIT 1;
	END LOOP;
END $$;
