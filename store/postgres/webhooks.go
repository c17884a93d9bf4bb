package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/store/storekit"
)

// ClaimWebhooks leases up to n due deliveries, oldest first. Deliveries
// of tasks that retention has removed are dropped as they are met. Each
// is handed out under a claimed ID (storekit.ClaimedWebhookID) ending in
// its lease end in microseconds: its due time while that claim leases
// it.
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
		RETURNING w.id, w.task_id, w.event, live.owner, live.callback_url, w.attempts, w.due`, s.nowArg(), max(n, 1), micros(lease))
}

// scanDelivery reads a row of ClaimWebhooks.
func scanDelivery(r pgx.CollectableRow) (imagegen.WebhookDelivery, error) {
	var d imagegen.WebhookDelivery
	var event string
	var leaseEnd time.Time
	err := r.Scan(&d.ID, &d.TaskID, &event, &d.Owner, &d.URL, &d.Attempts, &leaseEnd)
	d.ID = storekit.ClaimedWebhookID(d.ID, leaseEnd.UnixMicro())
	d.Event = imagegen.CallbackEvent(event)
	return d, err
}

// leasedBy splits a delivery ID into the row's id and, for a claimed
// one, the due time its claim set (exact: timestamptz keeps
// microseconds), or nil for a plain ID, which matches any.
func leasedBy(id string) (string, *time.Time) {
	id, leaseEnd, claimed := storekit.ParseClaimedWebhookID(id)
	if !claimed {
		return id, nil
	}
	due := time.UnixMicro(leaseEnd)
	return id, &due
}

// AckWebhook removes the delivery with this ID; with a claimed ID, only
// while that claim still leases it.
func (s *Store) AckWebhook(ctx context.Context, id string) error {
	id, due := leasedBy(id)
	_, err := s.pool.Exec(ctx, s.sql(`DELETE FROM {schema}.webhooks
		WHERE id = $1 AND ($2::timestamptz IS NULL OR due = $2)`), id, due)
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
	id, due := leasedBy(id)
	_, err := s.pool.Exec(ctx, s.sql(`UPDATE {schema}.webhooks
		SET attempts = attempts + $4, due = {now} + $3 * interval '1 microsecond'
		WHERE id = $2 AND ($5::timestamptz IS NULL OR due = $5)`), s.nowArg(), id, micros(delay), attempts, due)
	return err
}
