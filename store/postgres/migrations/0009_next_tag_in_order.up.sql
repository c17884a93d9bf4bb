-- imagegen store, version 9: next_tag reads the owner's last pending tag
-- as the one entry at the end of the owner's range of the index
-- tasks_owner_pending (ORDER BY tag DESC LIMIT 1), instead of max(tag)
-- over the owner's pending tasks, which the planner may read in full:
-- with fresh statistics it did, 20 ms per submitted task at 20,000
-- pending tasks of one owner, where reading one entry takes microseconds.

CREATE OR REPLACE FUNCTION {schema}.next_tag(p_owner text, p_v bigint) RETURNS bigint
LANGUAGE sql STABLE AS $$
	SELECT greatest(p_v, coalesce((SELECT tag FROM {schema}.tasks WHERE owner = p_owner AND status = 'pending'
			ORDER BY tag DESC LIMIT 1), p_v))
		+ 1000 / coalesce((SELECT weight FROM {schema}.accounts WHERE owner = p_owner), 1)
$$;
