-- Back to version 22: idempotency records name no task (records kept
-- to be settled are then taken over at once, as version 22 does).
ALTER TABLE {schema}.idempotency DROP COLUMN task_id, DROP COLUMN kept_until;
