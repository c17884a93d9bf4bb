-- Back to version 17: rate_allow as version 6 made it, one check a call,
-- and no rate_allow_many.
DROP FUNCTION {schema}.rate_allow_many(text[], bigint[], bigint, integer);

-- rate_allow records one request for p_key if fewer than p_limit were
-- accepted in the last p_window µs. p_now is the time in µs, or NULL for
-- the server's clock. Returns whether it was accepted, how many requests
-- are in the window after it, when one more will be allowed (µs, 0 while
-- count < limit) and the time it used.
CREATE OR REPLACE FUNCTION {schema}.rate_allow(p_key text, p_now bigint, p_window bigint, p_limit integer,
	OUT allowed boolean, OUT count integer, OUT free bigint, OUT at bigint)
LANGUAGE plpgsql AS $$
DECLARE
	ts     bigint[];
	w      bigint;
	n      integer;
	oldest integer;
	newest bigint;
	i      integer;
BEGIN
	at := coalesce(p_now, (extract(epoch FROM clock_timestamp()) * 1000000)::bigint);
	PERFORM set_config('synchronous_commit', 'off', true);
	LOOP
		SELECT r.times, r.window_us INTO ts, w FROM {schema}.rate_limits r WHERE r.key = p_key;
		IF NOT FOUND THEN -- the key's first request in a window: the row is made with it
			INSERT INTO {schema}.rate_limits (key, window_us, times) VALUES (p_key, p_window, ARRAY[at])
				ON CONFLICT (key) DO NOTHING;
			IF FOUND THEN
				allowed := true;
				count := 1;
				free := CASE WHEN p_limit = 1 THEN at + p_window ELSE 0 END;
				RETURN;
			END IF;
			CONTINUE; -- another call made the row first: count on it
		END IF;
		n := cardinality(ts);
		IF n > p_limit OR w <> p_window THEN
			-- The policy changed: keep the newest times that fit and count
			-- on from there (unless another call changed the row first).
			UPDATE {schema}.rate_limits r SET window_us = p_window,
				times = ARRAY(SELECT t FROM unnest(ts) AS t ORDER BY t DESC LIMIT p_limit)
				WHERE r.key = p_key AND r.times = ts AND r.window_us = w;
			CONTINUE;
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
				UPDATE {schema}.rate_limits r SET times[oldest] = at WHERE r.key = p_key AND r.times = ts;
				IF NOT FOUND THEN CONTINUE; END IF;
				ts[oldest] := at;
			ELSE -- every time is in the window: the ring grows
				UPDATE {schema}.rate_limits r SET times = ts || at WHERE r.key = p_key AND r.times = ts;
				IF NOT FOUND THEN CONTINUE; END IF;
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
		RETURN;
	END LOOP;
END $$;
