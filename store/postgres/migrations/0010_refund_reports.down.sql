-- Back to version 9: failing and cancelling report no refund.

DROP FUNCTION {schema}.cancel_task_refund(text, text, text, text, timestamptz, interval, text);
DROP FUNCTION {schema}.fail_task_refund(text, integer, text, text, timestamptz, interval, text);
