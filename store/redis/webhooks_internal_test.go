package redis

import (
	"context"
	"testing"
	"time"
)

// TestRetriedDeliveryOfAGoneTaskMakesNoStub: a delivery retried after
// its task expired counts no attempt on a task hash made anew (one field,
// no TTL: it never went), and the next claim drops it.
func TestRetriedDeliveryOfAGoneTaskMakesNoStub(t *testing.T) {
	fundedStores(t, 10, func(t *testing.T, s *Store) {
		ctx := context.Background()
		if err := s.rdb.ZAdd(ctx, s.k.webhooks(), goredisZ(0, "gone")).Err(); err != nil {
			t.Fatal(err)
		}
		if err := s.RetryWebhook(ctx, "gone", 0); err != nil {
			t.Fatalf("retry: %v", err)
		}
		if n, err := s.rdb.Exists(ctx, s.k.task("gone")).Result(); err != nil || n != 0 {
			t.Fatalf("task key of the gone task: %d, %v; want none", n, err)
		}
		if got, err := s.ClaimWebhooks(ctx, time.Minute, 10); err != nil || len(got) != 0 {
			t.Fatalf("claimed %v, %v; want nothing", got, err)
		}
		if n, err := s.rdb.ZCard(ctx, s.k.webhooks()).Result(); err != nil || n != 0 {
			t.Fatalf("deliveries left: %d, %v; want the gone task's dropped", n, err)
		}
	})
}
