-- Back to version 14: vtime as version 12 wrote it.
CREATE OR REPLACE FUNCTION {schema}.vtime(p_now timestamptz) RETURNS bigint
LANGUAGE plpgsql STABLE AS $$
BEGIN
	RETURN coalesce(
		(SELECT max(tag) FROM {schema}.tasks WHERE status = 'processing'),
		(SELECT tag - 1000 FROM {schema}.tasks WHERE status = 'pending' AND run_after <= p_now ORDER BY tag, seq LIMIT 1),
		0);
END $$;
