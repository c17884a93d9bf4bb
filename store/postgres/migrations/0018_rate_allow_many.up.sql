-- imagegen store, version 18: the rate limiter's checks of a batch in one
-- function call, rate_allow_many, instead of one call of rate_allow per
-- check (version 6's ring, its table and its answers unchanged).
--
-- A batch of 16 checks on 16 hot keys (pgbench, one session, the
-- statement as the limiter sends it) took about 1.0 ms as sixteen
-- lateral calls of rate_allow and 0.8 ms as one call of rate_allow_many:
-- a call of a PL/pgSQL function with OUT parameters costs about as much
-- as one of its statements, and the transaction-local
-- synchronous_commit = off is now set once a batch, not once a check.
--
-- rate_allow_many(keys, nows, window, limit) records one request for
-- each keys[i] in turn, at nows[i] (µs), or at the server's clock as the
-- check is made where nows[i] is NULL, each as rate_allow of version 6
-- would have: each check sees the rows that the checks before it
-- changed (a key named twice counts twice, the second after the first).
-- It returns a row per check, in the order of keys. Callers sort keys
-- (the same order in every process) so that two batches that want the
-- same rows never wait for each other in a cycle; the function keeps the
-- order it is given.
--
-- rate_allow keeps its name, arguments and results, as one call of
-- rate_allow_many, so that processes of the version before keep working
-- against this schema during a rolling upgrade.
CREATE FUNCTION {schema}.rate_allow_many(p_keys text[], p_nows bigint[], p_window bigint, p_limit integer,
	OUT allowed boolean, OUT count integer, OUT free bigint, OUT at bigint)
RETURNS SETOF record
LANGUAGE plpgsql AS $$
DECLARE
	k      text;
	ts     bigint[];
	w      bigint;
	n      integer;
	oldest integer;
	newest bigint;
	i      integer;
BEGIN
	PERFORM set_config('synchronous_commit', 'off', true);
	FOR j IN 1..coalesce(cardinality(p_keys), 0) LOOP
		k := p_keys[j];
		-- The server's clock as the check is made, not as the batch
		-- began: a check that waited behind others (their row locks)
		-- counts from when it counts.
		at := coalesce(p_nows[j], (extract(epoch FROM clock_timestamp()) * 1000000)::bigint);
		<<attempt>>
		LOOP
			SELECT r.times, r.window_us INTO ts, w FROM {schema}.rate_limits r WHERE r.key = k;
			IF NOT FOUND THEN -- the key's first request in a window: the row is made with it
				INSERT INTO {schema}.rate_limits (key, window_us, times) VALUES (k, p_window, ARRAY[at])
					ON CONFLICT (key) DO NOTHING;
				IF NOT FOUND THEN
					CONTINUE attempt; -- another call made the row first: count on it
				END IF;
				allowed := true;
				count := 1;
				free := CASE WHEN p_limit = 1 THEN at + p_window ELSE 0 END;
				EXIT attempt;
			END IF;
			n := cardinality(ts);
			IF n > p_limit OR w <> p_window THEN
				-- The policy changed: keep the newest times that fit and count
				-- on from there (unless another call changed the row first).
				UPDATE {schema}.rate_limits r SET window_us = p_window,
					times = ARRAY(SELECT t FROM unnest(ts) AS t ORDER BY t DESC LIMIT p_limit)
					WHERE r.key = k AND r.times = ts AND r.window_us = w;
				CONTINUE attempt;
			END IF;
			oldest := 1;
			newest := ts[1];
			FOR i IN 2..n LOOP
				IF ts[i] < ts[oldest] THEN oldest := i; END IF;
				IF ts[i] > newest THEN newest := ts[i]; END IF;
			END LOOP;
			-- Times never go back within a key (a clock stepped back, or
			-- another process's clock): a request counts at the newest time
			-- at least.
			IF newest > at THEN at := newest; END IF;
			count := 0;
			FOR i IN 1..n LOOP
				IF ts[i] > at - p_window THEN count := count + 1; END IF;
			END LOOP;
			allowed := count < p_limit;
			IF allowed THEN
				-- Compare and set: if another call changed the ring since it
				-- was read, read it again.
				IF count < n THEN -- the oldest time left the window: its slot is taken
					UPDATE {schema}.rate_limits r SET times[oldest] = at WHERE r.key = k AND r.times = ts;
					IF NOT FOUND THEN CONTINUE attempt; END IF;
					ts[oldest] := at;
				ELSE -- every time is in the window: the ring grows
					UPDATE {schema}.rate_limits r SET times = ts || at WHERE r.key = k AND r.times = ts;
					IF NOT FOUND THEN CONTINUE attempt; END IF;
					ts := ts || at;
				END IF;
				count := count + 1;
			END IF;
			free := 0;
			IF count >= p_limit THEN -- every time is in the window: the oldest leaves first
				free := ts[1];
				FOR i IN 2..cardinality(ts) LOOP
					IF ts[i] < free THEN free := ts[i]; END IF;
				END LOOP;
				free := free + p_window;
			END IF;
			EXIT attempt;
		END LOOP;
		RETURN NEXT;
	END LOOP;
END $$;

-- rate_allow, for processes of version 17 and before: one check.
CREATE OR REPLACE FUNCTION {schema}.rate_allow(p_key text, p_now bigint, p_window bigint, p_limit integer,
	OUT allowed boolean, OUT count integer, OUT free bigint, OUT at bigint)
LANGUAGE sql AS $$
	SELECT * FROM {schema}.rate_allow_many(ARRAY[p_key], ARRAY[p_now], p_window, p_limit)
$$;
