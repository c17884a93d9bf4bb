-- Back to version 21: the owner cap's count goes through whichever of
-- tasks_leases and tasks_owner the planner chooses.
DROP INDEX {schema}.tasks_owner_running;
