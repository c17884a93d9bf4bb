-- imagegen store, version 15: vtime reads the head of the fair queue in
-- order, whatever the statistics say (as claim_free does since version
-- 14).
--
-- vtime, called once per batch of submits (and per retry, release and
-- lease expiry), took the ready head of the queue with SELECT ... WHERE
-- status = 'pending' AND run_after <= now ORDER BY tag, seq LIMIT 1. On
-- a table without statistics (a young one, or autovacuum off) PostgreSQL
-- expects one ready task and plans it as a scan of tasks_ready (every
-- ready pending task) and a sort: 0.7 ms at 1,000 pending tasks, and the
-- scan grows with the queue. perf of the bench module's submit (3,000
-- tasks of one owner): two thirds of the backends' CPU was this scan,
-- and a batch of submits holds its owner's account row while it runs,
-- so submits of one owner wait for it one batch after the other.
--
-- It now walks tasks_fair through a cursor, which PostgreSQL plans for
-- its first rows (in order, no sort), and stops at the first ready task:
-- one entry when the head is ready, as it is unless retries wait there.
-- The result is the same: the largest tag being run, else one turn of
-- weight 1 before the ready head of the queue, else 0.
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
