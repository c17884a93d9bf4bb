-- Back to version 18: vtime as version 15 wrote it (0 when nothing runs
-- and no pending task is ready).
CREATE OR REPLACE FUNCTION {schema}.vtime(p_now timestamptz) RETURNS bigint
LANGUAGE plpgsql STABLE AS $$
DECLARE
	head NO SCROLL CURSOR FOR SELECT p.tag, p.run_after FROM {schema}.tasks p
		WHERE p.status = 'pending' ORDER BY p.tag, p.seq;
	v bigint;
	v_tag bigint;
	v_run_after timestamptz;
BEGIN
	v := (SELECT max(tag) FROM {schema}.tasks WHERE status = 'processing');
	IF v IS NOT NULL THEN
		RETURN v;
	END IF;
	OPEN head;
	LOOP
		FETCH head INTO v_tag, v_run_after;
		EXIT WHEN NOT FOUND;
		IF v_run_after <= p_now THEN
			CLOSE head;
			RETURN v_tag - 1000;
		END IF;
	END LOOP;
	CLOSE head;
	RETURN 0;
END $$;
