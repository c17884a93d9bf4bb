-- imagegen store, version 1: tasks and the work queue, images, the
-- credit ledger, API keys, idempotency records and shared secrets.
-- {schema} is replaced by the quoted schema name when applied.

CREATE TABLE {schema}.tasks (
	seq           bigint GENERATED ALWAYS AS IDENTITY,
	id            text PRIMARY KEY,
	owner         text NOT NULL,
	request       jsonb NOT NULL,
	model         text NOT NULL,
	cost          bigint NOT NULL CHECK (cost > 0),
	status        text NOT NULL CHECK (status IN ('pending', 'processing', 'success', 'failed')),
	attempt       integer NOT NULL DEFAULT 0,
	released      integer NOT NULL DEFAULT 0, -- claims given back at shutdown (not counted as attempts)
	lease_until   timestamptz,
	run_after     timestamptz NOT NULL,
	images        text[],
	error         text NOT NULL DEFAULT '',
	error_code    text NOT NULL DEFAULT '',
	last_error    text NOT NULL DEFAULT '',
	refunded      boolean NOT NULL DEFAULT false,
	refund_ref    text NOT NULL DEFAULT '', -- the next refund's ledger reference; "" is refund:<id>
	request_id    text NOT NULL DEFAULT '', -- the submitting API request (logs)
	callback_url  text NOT NULL DEFAULT '',
	callback_events text NOT NULL DEFAULT '', -- imagegen.EventsField: "" is completed only
	created_at    timestamptz NOT NULL,
	updated_at    timestamptz NOT NULL,
	started_at    timestamptz, -- the first claim
	finished_at   timestamptz,
	expires_at    timestamptz
) WITH (fillfactor = 90);

-- The queue: ready pending tasks, oldest first (claims read its head).
CREATE INDEX tasks_ready ON {schema}.tasks (run_after, seq) WHERE status = 'pending';
-- Leases, for recovery of tasks whose worker died.
CREATE INDEX tasks_leases ON {schema}.tasks (lease_until) WHERE status = 'processing';
-- Retention of finished tasks.
CREATE INDEX tasks_expiry ON {schema}.tasks (expires_at) WHERE expires_at IS NOT NULL;
-- An owner's tasks, newest first (listing).
CREATE INDEX tasks_owner ON {schema}.tasks (owner, seq);

-- Callback deliveries: one per task and event (imagegen.WebhookID), due
-- at a time, leased by pushing due forward.
CREATE TABLE {schema}.webhooks (
	seq      bigint GENERATED ALWAYS AS IDENTITY,
	id       text PRIMARY KEY,
	task_id  text NOT NULL,
	event    text NOT NULL,
	due      timestamptz NOT NULL,
	attempts integer NOT NULL DEFAULT 0
);
CREATE INDEX webhooks_due ON {schema}.webhooks (due, seq);

-- wants reports whether callback_events (imagegen.EventsField) ask for
-- p_event; "" means completed only (imagegen.Wants).
CREATE FUNCTION {schema}.wants(p_events text, p_event text) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE WHEN p_events = '' THEN p_event = 'completed' ELSE p_event = ANY (string_to_array(p_events, ',')) END
$$;

CREATE TABLE {schema}.images (
	id           text PRIMARY KEY,
	task_id      text NOT NULL,
	content_type text NOT NULL,
	data         bytea NOT NULL,
	expires_at   timestamptz NOT NULL
);
CREATE INDEX images_expiry ON {schema}.images (expires_at);

CREATE TABLE {schema}.accounts (
	owner   text PRIMARY KEY,
	balance bigint NOT NULL CHECK (balance >= 0),
	entries bigint NOT NULL DEFAULT 0 -- ledger entries so far: the last one's n
);

-- The ledger. n numbers an owner's entries 1, 2, 3... (LedgerEntry.ID);
-- every entry is written with its account row locked and counted there.
CREATE TABLE {schema}.ledger (
	seq           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	owner         text NOT NULL,
	n             bigint NOT NULL,
	kind          text NOT NULL,
	amount        bigint NOT NULL,
	ref           text NOT NULL,
	at            timestamptz NOT NULL,
	balance_after bigint NOT NULL,
	UNIQUE (owner, ref),
	UNIQUE (owner, n)
);

CREATE TABLE {schema}.api_keys (
	seq        bigint GENERATED ALWAYS AS IDENTITY,
	hash       text PRIMARY KEY,
	id         text NOT NULL,
	owner      text NOT NULL,
	hint       text NOT NULL DEFAULT '',
	name       text NOT NULL DEFAULT '',
	created_at timestamptz NOT NULL,
	revoked    boolean NOT NULL DEFAULT false
);
CREATE INDEX api_keys_owner ON {schema}.api_keys (owner, seq);

CREATE TABLE {schema}.idempotency (
	owner       text NOT NULL,
	key         text NOT NULL,
	fingerprint text NOT NULL,
	done        boolean NOT NULL DEFAULT false,
	status      integer NOT NULL DEFAULT 0,
	body        bytea,
	expires_at  timestamptz NOT NULL,
	PRIMARY KEY (owner, key)
);
CREATE INDEX idempotency_expiry ON {schema}.idempotency (expires_at);

CREATE TABLE {schema}.secrets (
	name  text PRIMARY KEY,
	value bytea NOT NULL
);

-- add_entry appends a grant or web entry once per reference, never
-- taking the balance below zero. code: 1 applied, 0 balance short,
-- -1 reference already used.
CREATE FUNCTION {schema}.add_entry(p_owner text, p_kind text, p_amount bigint, p_ref text, p_now timestamptz,
	OUT code integer, OUT balance bigint)
LANGUAGE plpgsql AS $$
DECLARE
	n bigint;
BEGIN
	INSERT INTO {schema}.accounts AS a (owner, balance) VALUES (p_owner, 0) ON CONFLICT (owner) DO NOTHING;
	SELECT a.balance INTO balance FROM {schema}.accounts a WHERE a.owner = p_owner FOR UPDATE;
	IF EXISTS (SELECT 1 FROM {schema}.ledger l WHERE l.owner = p_owner AND l.ref = p_ref) THEN
		code := -1;
		RETURN;
	END IF;
	IF balance + p_amount < 0 THEN
		code := 0;
		RETURN;
	END IF;
	UPDATE {schema}.accounts a SET balance = a.balance + p_amount, entries = a.entries + 1 WHERE a.owner = p_owner
		RETURNING a.balance, a.entries INTO balance, n;
	INSERT INTO {schema}.ledger (owner, n, kind, amount, ref, at, balance_after)
		VALUES (p_owner, n, p_kind, p_amount, p_ref, p_now, balance);
	code := 1;
END $$;

-- create_tasks creates a batch of tasks (group commit): for each, in
-- order, it debits the cost, appends the charge and inserts the task as
-- pending, or changes nothing for that task when its owner's balance is
-- short (code 0) or its id is taken (code -1). A batch is exactly as if
-- its tasks had been submitted one after another. code 1: created;
-- balance: the owner's balance after it.
CREATE FUNCTION {schema}.create_tasks(p_ids text[], p_owners text[], p_requests text[], p_models text[],
	p_costs bigint[], p_callbacks text[], p_events text[], p_request_ids text[], p_now timestamptz, OUT code integer[], OUT balance bigint[])
LANGUAGE plpgsql AS $$
DECLARE
	b bigint;
	n bigint;
BEGIN
	code := '{}';
	balance := '{}';
	FOR i IN 1 .. coalesce(cardinality(p_ids), 0) LOOP
		UPDATE {schema}.accounts a SET balance = a.balance - p_costs[i]
			WHERE a.owner = p_owners[i] AND a.balance >= p_costs[i]
			RETURNING a.balance INTO b;
		IF NOT FOUND THEN
			SELECT a.balance INTO b FROM {schema}.accounts a WHERE a.owner = p_owners[i];
			code := code || 0;
			balance := balance || coalesce(b, 0);
			CONTINUE;
		END IF;
		INSERT INTO {schema}.tasks (id, owner, request, model, cost, status, run_after, callback_url, callback_events,
				request_id, created_at, updated_at)
			VALUES (p_ids[i], p_owners[i], p_requests[i]::jsonb, p_models[i], p_costs[i], 'pending', p_now,
				p_callbacks[i], p_events[i], p_request_ids[i], p_now, p_now)
			ON CONFLICT (id) DO NOTHING;
		IF NOT FOUND THEN
			UPDATE {schema}.accounts a SET balance = a.balance + p_costs[i] WHERE a.owner = p_owners[i]
				RETURNING a.balance INTO b;
			code := code || -1;
			balance := balance || b;
			CONTINUE;
		END IF;
		UPDATE {schema}.accounts a SET entries = a.entries + 1 WHERE a.owner = p_owners[i] RETURNING a.entries INTO n;
		INSERT INTO {schema}.ledger (owner, n, kind, amount, ref, at, balance_after)
			VALUES (p_owners[i], n, 'charge', -p_costs[i], 'task:' || p_ids[i], p_now, b);
		code := code || 1;
		balance := balance || b;
	END LOOP;
END $$;

-- fail_locked ends a task the caller has locked as failed, refunds its
-- cost once, queues its callback and tells the watchers.
CREATE FUNCTION {schema}.fail_locked(p_id text, p_code text, p_msg text, p_now timestamptz,
	p_retention interval, p_channel text)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	t record;
	b bigint;
	n bigint;
BEGIN
	UPDATE {schema}.tasks SET refunded = true WHERE id = p_id AND NOT refunded RETURNING owner, cost, refund_ref INTO t;
	IF FOUND THEN
		UPDATE {schema}.accounts a SET balance = a.balance + t.cost, entries = a.entries + 1 WHERE a.owner = t.owner
			RETURNING a.balance, a.entries INTO b, n;
		INSERT INTO {schema}.ledger (owner, n, kind, amount, ref, at, balance_after)
			VALUES (t.owner, n, 'refund', t.cost, CASE WHEN t.refund_ref <> '' THEN t.refund_ref ELSE 'refund:' || p_id END,
				p_now, b);
	END IF;
	UPDATE {schema}.tasks SET status = 'failed', error = p_msg, error_code = p_code, lease_until = NULL,
		updated_at = p_now, finished_at = p_now, expires_at = p_now + p_retention
	WHERE id = p_id;
	INSERT INTO {schema}.webhooks (id, task_id, event, due)
		SELECT p_id, p_id, 'completed', p_now FROM {schema}.tasks
		WHERE id = p_id AND callback_url <> '' AND {schema}.wants(callback_events, 'completed')
		ON CONFLICT (id) DO NOTHING;
	PERFORM pg_notify(p_channel, p_id);
END $$;

-- fail_task fails the task if p_attempt holds its lease.
CREATE FUNCTION {schema}.fail_task(p_id text, p_attempt integer, p_code text, p_msg text, p_now timestamptz,
	p_retention interval, p_channel text)
RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM 1 FROM {schema}.tasks WHERE id = p_id AND status = 'processing' AND attempt = p_attempt FOR UPDATE;
	IF NOT FOUND THEN
		RETURN false;
	END IF;
	PERFORM {schema}.fail_locked(p_id, p_code, p_msg, p_now, p_retention, p_channel);
	RETURN true;
END $$;

-- cancel_task fails the owner's unfinished task. 1 cancelled, 0 no
-- such task of the owner, -1 it has finished.
CREATE FUNCTION {schema}.cancel_task(p_owner text, p_id text, p_code text, p_msg text, p_now timestamptz,
	p_retention interval, p_channel text)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
	st text;
BEGIN
	SELECT status INTO st FROM {schema}.tasks
	WHERE id = p_id AND owner = p_owner AND (expires_at IS NULL OR expires_at > p_now) FOR UPDATE;
	IF NOT FOUND THEN
		RETURN 0;
	END IF;
	IF st NOT IN ('pending', 'processing') THEN
		RETURN -1;
	END IF;
	PERFORM {schema}.fail_locked(p_id, p_code, p_msg, p_now, p_retention, p_channel);
	RETURN 1;
END $$;
