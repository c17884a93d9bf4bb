package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/imagegen/imagegen"
)

// ClaimWebhooks leases up to n due deliveries, oldest first. Deliveries
// of tasks that retention has removed are dropped as they are met.
func (s *Store) ClaimWebhooks(ctx context.Context, lease time.Duration, n int) ([]imagegen.WebhookDelivery, error) {
	return queryRows(ctx, s, "claim webhooks", scanDelivery, `WITH due AS (
			SELECT w.id, w.task_id FROM {schema}.webhooks w
			WHERE w.due <= {now}
			ORDER BY w.due, w.seq LIMIT $2
			FOR UPDATE SKIP LOCKED
		), live AS (
			SELECT due.id, t.owner, t.callback_url FROM due
			JOIN {schema}.tasks t ON t.id = due.task_id AND (t.expires_at IS NULL OR t.expires_at > {now})
		), gone AS (
			DELETE FROM {schema}.webhooks w USING due
			WHERE w.id = due.id AND due.id NOT IN (SELECT id FROM live)
		)
		UPDATE {schema}.webhooks w SET due = {now} + $3 * interval '1 microsecond'
		FROM live WHERE w.id = live.id
		RETURNING w.id, w.task_id, w.event, live.owner, live.callback_url, w.attempts`, s.nowArg(), max(n, 1), micros(lease))
}

// scanDelivery reads a row of ClaimWebhooks.
func scanDelivery(r pgx.CollectableRow) (imagegen.WebhookDelivery, error) {
	var d imagegen.WebhookDelivery
	var event string
	err := r.Scan(&d.ID, &d.TaskID, &event, &d.Owner, &d.URL, &d.Attempts)
	d.Event = imagegen.CallbackEvent(event)
	return d, err
}

// AckWebhook removes the delivery with this ID.
func (s *Store) AckWebhook(ctx context.Context, id string) error {
	_, err := s.pool.Exec(ctx, s.sql(`DELETE FROM {schema}.webhooks WHERE id = $1`), id)
	return s.wrapErr("ack webhook", err)
}

// RetryWebhook counts an attempt of the delivery with this ID and makes
// it due again after delay.
func (s *Store) RetryWebhook(ctx context.Context, id string, delay time.Duration) error {
	return s.wrapErr("retry webhook", s.rescheduleHook(ctx, id, delay, 1))
}

// PostponeWebhook makes the delivery due after delay, counting no attempt.
func (s *Store) PostponeWebhook(ctx context.Context, id string, delay time.Duration) error {
	return s.wrapErr("postpone webhook", s.rescheduleHook(ctx, id, delay, 0))
}

func (s *Store) rescheduleHook(ctx context.Context, id string, delay time.Duration, attempts int) error {
	_, err := s.pool.Exec(ctx, s.sql(`UPDATE {schema}.webhooks
		SET attempts = attempts + $4, due = {now} + $3 * interval '1 microsecond'
		WHERE id = $2`), s.nowArg(), id, micros(delay), attempts)
	return err
}
