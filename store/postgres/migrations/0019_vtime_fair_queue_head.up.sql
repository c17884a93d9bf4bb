-- imagegen store, version 19: the virtual time is never behind the head
-- of the fair queue, whether tasks run or not.
--
-- Version 15's vtime was the largest tag of a processing task whenever
-- one ran, else one turn before the ready head of the queue, else 0. Two
-- cases broke the turns of docs/scheduling.md, which the memory and
-- Redis stores (the largest tag claimed) keep:
-- - a slow generation claimed long before (or a dead worker's, until
--   its lease is recovered) held the virtual time at its old tag while
--   the queue went on, so an owner who submitted then had its tasks
--   tagged behind the waiting owners' next ones, and its whole backlog
--   ran before them (storetest's LongRunningTaskKeepsNoOneBack);
-- - with nothing running and every pending task waiting out a retry
--   delay, it was 0, while those tasks' tags had moved on with the work
--   served before: a new owner's backlog ran before the retried tasks
--   once they were ready (storetest's RetriedTaskKeepsItsTurn).
-- It is now the larger of the largest running tag and one turn of
-- weight 1 before the ready head (before the head when no task is
-- ready), and 0 when neither exists. The walk to the ready head stops at
-- the first ready task, as version 15's did when nothing ran; it now
-- runs while tasks run too: one entry when the head is ready, as it is
-- unless retries wait there (which the claims walk past as well).
CREATE OR REPLACE FUNCTION {schema}.vtime(p_now timestamptz) RETURNS bigint
LANGUAGE plpgsql STABLE AS $$
DECLARE
	head NO SCROLL CURSOR FOR SELECT p.tag, p.run_after FROM {schema}.tasks p
		WHERE p.status = 'pending' ORDER BY p.tag, p.seq;
	v bigint;
	v_head bigint;
	v_first bigint;
	v_tag bigint;
	v_run_after timestamptz;
BEGIN
	v := (SELECT max(tag) FROM {schema}.tasks WHERE status = 'processing');
	OPEN head;
	LOOP
		FETCH head INTO v_tag, v_run_after;
		EXIT WHEN NOT FOUND;
		v_first := coalesce(v_first, v_tag);
		IF v_run_after <= p_now THEN
			v_head := v_tag;
			EXIT;
		END IF;
	END LOOP;
	CLOSE head;
	-- greatest passes over NULLs: either alone, or 0 when neither is.
	RETURN coalesce(greatest(v, coalesce(v_head, v_first) - 1000), 0);
END $$;
