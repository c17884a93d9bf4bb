DROP FUNCTION {schema}.rate_allow(text, bigint, bigint, integer);
DROP TABLE {schema}.rate_limits;
