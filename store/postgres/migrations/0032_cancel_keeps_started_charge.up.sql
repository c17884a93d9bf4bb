-- imagegen store, version 32: a cancel may keep the charge of a task a
-- worker had claimed (Store.CancelTask with
-- CancelParams.KeepStartedCharge): its generation had begun, and a
-- provider may bill for it. New functions beside cancel_task_refund,
-- which processes of version 31 keep calling while a deployment rolls
-- (it refunds every cancel, as before).

-- fail_kept_locked fails a task whose row the caller holds locked and
-- refunds nothing: fail_locked's ending (version 1) without its refund.
CREATE FUNCTION {schema}.fail_kept_locked(p_id text, p_code text, p_msg text, p_now timestamptz,
	p_retention interval, p_channel text)
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	UPDATE {schema}.tasks SET status = 'failed', error = p_msg, error_code = p_code, lease_until = NULL,
		updated_at = p_now, finished_at = p_now, expires_at = p_now + p_retention
	WHERE id = p_id;
	INSERT INTO {schema}.webhooks (id, task_id, event, due)
		SELECT p_id, p_id, 'completed', p_now FROM {schema}.tasks
		WHERE id = p_id AND callback_url <> '' AND {schema}.wants(callback_events, 'completed')
		ON CONFLICT (id) DO NOTHING;
	PERFORM pg_notify(p_channel, p_id);
END $$;

-- cancel_task_charged fails the owner's unfinished task and returns the
-- credits refunded: 0 when the task had been refunded before, or when
-- p_keep_started and the task is processing (its charge is kept, and
-- it stays unrefunded); -1 no such task of the owner, -2 it has
-- finished. The status it decides on is the one it reads under the
-- row's lock.
CREATE FUNCTION {schema}.cancel_task_charged(p_owner text, p_id text, p_code text, p_msg text, p_now timestamptz,
	p_retention interval, p_channel text, p_keep_started boolean)
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
	IF p_keep_started AND st = 'processing' THEN
		PERFORM {schema}.fail_kept_locked(p_id, p_code, p_msg, p_now, p_retention, p_channel);
		RETURN 0;
	END IF;
	PERFORM {schema}.fail_locked(p_id, p_code, p_msg, p_now, p_retention, p_channel);
	RETURN r;
END $$;
