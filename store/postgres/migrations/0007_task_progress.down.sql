-- Back to version 6: no task progress.

ALTER TABLE {schema}.tasks DROP COLUMN progress;
