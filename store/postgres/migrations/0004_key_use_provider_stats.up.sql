-- imagegen store, version 4: when each API key was last used (to the
-- minute, imagegen.KeyUseGranularity; NULL for never), and the counts of
-- provider calls by outcome and of fallbacks, in per-minute buckets
-- shared by every process (AddProviderStats, ProviderStats).

ALTER TABLE {schema}.api_keys ADD COLUMN last_used_at timestamptz;

-- kind 'r': provider a's calls that ended with outcome b;
-- kind 'f': fallbacks from model a to model b.
CREATE TABLE {schema}.provider_stats (
	bucket timestamptz NOT NULL, -- the minute the counts were added in
	kind   text NOT NULL,
	a      text NOT NULL,
	b      text NOT NULL,
	n      bigint NOT NULL,
	PRIMARY KEY (bucket, kind, a, b)
);
