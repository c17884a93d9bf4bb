-- imagegen store, version 5: the web console's sessions (PutSession,
-- Session, EndSession, EndSessions), so that a sign-out ends a session
-- in every process at once. id is a hash of the cookie's token; a row is
-- invisible once expires_at has passed, and Sweep removes it.

CREATE TABLE {schema}.sessions (
	id         text PRIMARY KEY,
	owner      text NOT NULL,
	key_id     text NOT NULL,
	created_at timestamptz NOT NULL,
	expires_at timestamptz NOT NULL
);
CREATE INDEX sessions_owner ON {schema}.sessions (owner);
CREATE INDEX sessions_expiry ON {schema}.sessions (expires_at);
