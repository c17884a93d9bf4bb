-- Back to version 3: no last use of keys, no provider statistics.

DROP TABLE {schema}.provider_stats;
ALTER TABLE {schema}.api_keys DROP COLUMN last_used_at;
