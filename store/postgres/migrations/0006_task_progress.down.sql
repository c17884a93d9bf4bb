-- Back to version 5: no task progress.

ALTER TABLE {schema}.tasks DROP COLUMN progress;
