-- Back to version 31: every cancel refunds (cancel_task_refund, kept
-- through version 32, is what processes of version 31 call).

DROP FUNCTION {schema}.cancel_task_charged(text, text, text, text, timestamptz, interval, text, boolean);
DROP FUNCTION {schema}.fail_kept_locked(text, text, text, timestamptz, interval, text);
