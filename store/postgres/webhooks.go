package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/imagegen/imagegen"
)

// ClaimWebhooks leases up to n due deliveries, oldest first. Deliveries
// of tasks that retention has removed are never handed out.
func (s *Store) ClaimWebhooks(ctx context.Context, lease time.Duration, n int) ([]imagegen.WebhookDelivery, error) {
	rows, err := s.pool.Query(ctx, s.sql(`WITH due AS (
			SELECT id FROM {schema}.tasks
			WHERE hook_due <= {now} AND `+visible+`
			ORDER BY hook_due, seq LIMIT $2
			FOR UPDATE SKIP LOCKED
		)
		UPDATE {schema}.tasks t SET hook_due = {now} + $3 * interval '1 microsecond'
		FROM due WHERE t.id = due.id
		RETURNING t.id, t.owner, t.callback_url, t.hook_attempts`), s.nowArg(), max(n, 1), micros(lease))
	if err != nil {
		return nil, wrapErr("claim webhooks", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (imagegen.WebhookDelivery, error) {
		var d imagegen.WebhookDelivery
		err := r.Scan(&d.TaskID, &d.Owner, &d.URL, &d.Attempts)
		return d, err
	})
	return out, wrapErr("claim webhooks", err)
}

// AckWebhook removes a delivery.
func (s *Store) AckWebhook(ctx context.Context, taskID string) error {
	_, err := s.pool.Exec(ctx, s.sql(`UPDATE {schema}.tasks SET hook_due = NULL WHERE id = $1 AND hook_due IS NOT NULL`), taskID)
	return wrapErr("ack webhook", err)
}

// RetryWebhook counts an attempt and reschedules the delivery.
func (s *Store) RetryWebhook(ctx context.Context, taskID string, delay time.Duration) error {
	_, err := s.pool.Exec(ctx, s.sql(`UPDATE {schema}.tasks
		SET hook_attempts = hook_attempts + 1, hook_due = {now} + $3 * interval '1 microsecond'
		WHERE id = $2 AND hook_due IS NOT NULL`), s.nowArg(), taskID, micros(delay))
	return wrapErr("retry webhook", err)
}
