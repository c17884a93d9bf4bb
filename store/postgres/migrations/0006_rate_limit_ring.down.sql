-- Back to version 5's rate limiter (version 2's sorted log of times); the
-- counts start afresh.
DROP FUNCTION {schema}.rate_allow(text, bigint, bigint, integer);
DROP TABLE {schema}.rate_limits;
CREATE TABLE {schema}.rate_limits (
	key        text PRIMARY KEY,
	times      bigint[] NOT NULL,
	expires_at bigint NOT NULL -- µs: when the newest request leaves the window
);
CREATE INDEX rate_limits_expiry ON {schema}.rate_limits (expires_at);

-- rate_allow records one request for p_key if fewer than p_limit were
-- accepted in the last p_window µs. p_now is the time in µs, or NULL for
-- the server's clock. Returns whether it was accepted, how many requests
-- are in the window after it, when one more will be allowed (µs, 0 while
-- count < limit) and the time it used.
CREATE FUNCTION {schema}.rate_allow(p_key text, p_now bigint, p_window bigint, p_limit integer,
	OUT allowed boolean, OUT count integer, OUT free bigint, OUT at bigint)
LANGUAGE plpgsql AS $$
DECLARE
	ts bigint[];
BEGIN
	at := coalesce(p_now, (extract(epoch FROM clock_timestamp()) * 1000000)::bigint);
	INSERT INTO {schema}.rate_limits (key, times, expires_at) VALUES (p_key, '{}', 0)
		ON CONFLICT (key) DO NOTHING;
	SELECT r.times INTO ts FROM {schema}.rate_limits r WHERE r.key = p_key FOR UPDATE;
	-- Times never go back within a key (a clock stepped back, or another
	-- process's clock): a request counts at the newest time at least.
	IF cardinality(ts) > 0 AND ts[cardinality(ts)] > at THEN
		at := ts[cardinality(ts)];
	END IF;
	ts := ARRAY(SELECT t FROM unnest(ts) AS t WHERE t > at - p_window ORDER BY t);
	count := cardinality(ts);
	allowed := count < p_limit;
	IF allowed THEN
		ts := ts || at;
		count := count + 1;
	END IF;
	free := 0;
	IF count >= p_limit THEN
		free := ts[count - p_limit + 1] + p_window;
	END IF;
	UPDATE {schema}.rate_limits SET times = ts, expires_at = coalesce(ts[cardinality(ts)], at) + p_window
		WHERE key = p_key;
END $$;
