package memory

import (
	"context"
	"time"
)

// expiryQueue orders finished tasks by removal time.
type expiryQueue []expiry

type expiry struct {
	at time.Time
	id string
}

func (q expiryQueue) Len() int           { return len(q) }
func (q expiryQueue) Less(i, j int) bool { return q[i].at.Before(q[j].at) }
func (q expiryQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *expiryQueue) Push(x any)        { *q = append(*q, x.(expiry)) }
func (q *expiryQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// QueuePositions counts, for each pending task, the queue entries
// ahead of it: O(log pending) each.
func (s *Store) QueuePositions(_ context.Context, ids []string) ([]int, error) {
	s.lock()
	defer s.mu.Unlock()
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = -1
		if r, ok := s.find(id); ok && r.status == statusPending && r.queuedNow() {
			out[i] = s.fair.ahead(r.fair.key)
		}
	}
	return out, nil
}
