-- imagegen store, version 6: the rate limiter (ratelimit/postgres) keeps
-- the times of each key's recent accepted requests in a ring and updates
-- one slot of it in place per accepted request, instead of rewriting a
-- sorted array (and an indexed expiry) on every request:
--
--   * times holds the times (µs since 1970) of the key's last accepted
--     requests, at most Limit of them, in no order. A request at t is
--     allowed when fewer than Limit of them are in the window (after
--     t - window), as the sliding log of version 2 counted them. It then
--     takes the slot of the oldest time if that one has left the window,
--     and is appended otherwise: the ring grows to about as many requests
--     as the key makes in one window (Limit at most), then stays that
--     size and changes one slot per accepted request.
--   * The only index is the primary key, and the table leaves half of
--     each page free, so an update stays on its page (a HOT update) and
--     the write-ahead log records about the bytes that changed (one slot):
--     about 150 bytes per accepted request, and nothing for a refusal,
--     which writes nothing.
--   * window_us is the window the row is counted in, for the sweep of
--     idle rows (a sequential scan, at most once a window per limiter).
--   * rate_allow commits without waiting for the log to reach the disk
--     (synchronous_commit off for its transaction): a crash of the
--     database server may forget the accepted requests of its last
--     fraction of a second, which a rate limit can afford; the requests
--     themselves are not lost, only their count.
--
-- The counts of version 2 are not carried over: every key starts afresh.
-- The function keeps its name, arguments and results, so processes of the
-- version before keep working against this table (their sweep fails
-- quietly until they are replaced).

DROP FUNCTION {schema}.rate_allow(text, bigint, bigint, integer);
DROP TABLE {schema}.rate_limits;

CREATE TABLE {schema}.rate_limits (
	key       text PRIMARY KEY,
	window_us bigint NOT NULL,
	times     bigint[] NOT NULL
) WITH (fillfactor = 50);

-- rate_allow records one request for p_key if fewer than p_limit were
-- accepted in the last p_window µs. p_now is the time in µs, or NULL for
-- the server's clock. Returns whether it was accepted, how many requests
-- are in the window after it, when one more will be allowed (µs, 0 while
-- count < limit) and the time it used.
CREATE FUNCTION {schema}.rate_allow(p_key text, p_now bigint, p_window bigint, p_limit integer,
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
