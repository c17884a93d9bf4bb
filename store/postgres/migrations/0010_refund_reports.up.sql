-- imagegen store, version 10: failing and cancelling a task report the
-- credits they gave back (Store.FailTask and CancelTask), read under the
-- row lock that the failure takes. New functions beside fail_task and
-- cancel_task, which processes of version 9 keep calling while a
-- deployment rolls.

-- fail_task_refund fails the task if p_attempt holds its lease and
-- returns the credits refunded (0 when the task had been refunded
-- before), or -1 when p_attempt does not hold it.
CREATE FUNCTION {schema}.fail_task_refund(p_id text, p_attempt integer, p_code text, p_msg text, p_now timestamptz,
	p_retention interval, p_channel text)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
	r bigint;
BEGIN
	SELECT CASE WHEN refunded THEN 0 ELSE cost END INTO r FROM {schema}.tasks
	WHERE id = p_id AND status = 'processing' AND attempt = p_attempt FOR UPDATE;
	IF NOT FOUND THEN
		RETURN -1;
	END IF;
	PERFORM {schema}.fail_locked(p_id, p_code, p_msg, p_now, p_retention, p_channel);
	RETURN r;
END $$;

-- cancel_task_refund fails the owner's unfinished task and returns the
-- credits refunded (0 when the task had been refunded before); -1 no
-- such task of the owner, -2 it has finished.
CREATE FUNCTION {schema}.cancel_task_refund(p_owner text, p_id text, p_code text, p_msg text, p_now timestamptz,
	p_retention interval, p_channel text)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
	st text;
	r bigint;
BEGIN
	SELECT status, CASE WHEN refunded THEN 0 ELSE cost END INTO st, r FROM {schema}.tasks
	WHERE id = p_id AND owner = p_owner AND (expires_at IS NULL OR expires_at > p_now) FOR UPDATE;
	IF NOT FOUND THEN
		RETURN -1;
	END IF;
	IF st NOT IN ('pending', 'processing') THEN
		RETURN -2;
	END IF;
	PERFORM {schema}.fail_locked(p_id, p_code, p_msg, p_now, p_retention, p_channel);
	RETURN r;
END $$;
