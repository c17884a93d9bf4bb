-- Back to version 13: claims without caps or rates are one statement of
-- the store's again.
DROP FUNCTION {schema}.claim_free(timestamptz, interval, integer);
