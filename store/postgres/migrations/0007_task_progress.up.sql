-- imagegen store, version 7: a running task's progress (SetProgress),
-- 0 to 1 as its model reports it, reset at each claim.

ALTER TABLE {schema}.tasks ADD COLUMN progress double precision NOT NULL DEFAULT 0;
