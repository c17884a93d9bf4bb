package memory

import (
	"context"
	"time"
)

// expiryQueue orders idempotency records and console sessions by
// expiry (a minHeap).
type expiryQueue = minHeap[expiry]

type expiry struct {
	at time.Time
	id string
}

func (e expiry) before(o expiry) bool { return e.at.Before(o.at) }

// QueuePositions counts, for each pending task, the queue entries
// ahead of it, in every model's queue: O(models × log pending) each.
func (s *Store) QueuePositions(_ context.Context, ids []string) ([]int, error) {
	s.lock()
	defer s.mu.Unlock()
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = -1
		if r, ok := s.find(id); ok && r.status == statusPending && r.queuedNow() {
			out[i] = s.ahead(r.fair.key)
		}
	}
	return out, nil
}
