-- Back to version 29: model_heads as version 27 defined it (copied from
-- its migration with its comment), each model's head read with SELECT
-- ... LIMIT 1. Processes of version 30 run against the schema after
-- this: model_heads keeps its signature and its answer.

-- model_heads as version 26 made it, the models' queues now of the
-- tasks neither parked nor delayed. A model whose pending tasks are all
-- delayed has none, but the claims give back the due ones (undelay)
-- before they call it, so a model whose retries are due is found.
CREATE OR REPLACE FUNCTION {schema}.model_heads(p_now timestamptz, OUT models text[], OUT tags bigint[], OUT seqs bigint[],
	OUT parked boolean[])
LANGUAGE plpgsql STABLE AS $$
DECLARE
	v_paused text[] := ARRAY(SELECT m.model FROM {schema}.models m WHERE m.paused_until > p_now);
	v_model text;
	v_tag bigint;
	v_seq bigint;
	j integer;
BEGIN
	models := '{}';
	tags := '{}';
	seqs := '{}';
	parked := '{}';
	SELECT p.model, p.tag, p.seq INTO v_model, v_tag, v_seq FROM {schema}.tasks p
		WHERE p.status = 'pending' AND NOT p.parked AND NOT p.delayed ORDER BY p.model, p.tag, p.seq LIMIT 1;
	WHILE FOUND LOOP
		IF NOT v_model = ANY (v_paused) THEN
			models := models || v_model;
			tags := tags || v_tag;
			seqs := seqs || v_seq;
			parked := parked || false;
		END IF;
		SELECT p.model, p.tag, p.seq INTO v_model, v_tag, v_seq FROM {schema}.tasks p
			WHERE p.status = 'pending' AND NOT p.parked AND NOT p.delayed AND p.model > v_model ORDER BY p.model, p.tag, p.seq LIMIT 1;
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
