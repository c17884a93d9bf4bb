-- Back to version 7: one first-in-first-out queue, no caps.

DROP FUNCTION {schema}.claim_tasks(timestamptz, interval, integer, integer, integer, text[], integer[], integer[]);
DROP FUNCTION {schema}.held_reason(text, text, timestamptz, integer, integer, integer, boolean, boolean);
DROP FUNCTION {schema}.submit_tasks(text[], text[], text[], text[], bigint[], text[], text[], text[], integer[], timestamptz);
DROP FUNCTION {schema}.next_tag(text, bigint);
DROP FUNCTION {schema}.vtime(timestamptz);
DROP TABLE {schema}.models;
ALTER TABLE {schema}.accounts DROP COLUMN weight;
DROP INDEX {schema}.tasks_owner_pending;
DROP INDEX {schema}.tasks_fair;
ALTER TABLE {schema}.tasks DROP COLUMN tag;
