-- Back to version 8's next_tag (max(tag) over the owner's pending tasks).
CREATE OR REPLACE FUNCTION {schema}.next_tag(p_owner text, p_v bigint) RETURNS bigint
LANGUAGE sql STABLE AS $$
	SELECT greatest(p_v, coalesce((SELECT max(tag) FROM {schema}.tasks WHERE owner = p_owner AND status = 'pending'), p_v))
		+ 1000 / coalesce((SELECT weight FROM {schema}.accounts WHERE owner = p_owner), 1)
$$;
