package memory

import (
	"context"
	"time"

	"github.com/imagegen/imagegen"
)

// queue orders pending tasks by RunAfter, then by submission.
// It implements heap.Interface.
type queue []queued

type queued struct {
	runAfter time.Time
	seq      uint64
	rec      *record
}

func (q queue) Len() int           { return len(q) }
func (q queue) Less(i, j int) bool { return q[i].before(q[j]) }

// before reports whether a is claimed before b.
func (a queued) before(b queued) bool {
	if !a.runAfter.Equal(b.runAfter) {
		return a.runAfter.Before(b.runAfter)
	}
	return a.seq < b.seq
}
func (q queue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *queue) Push(x any)   { *q = append(*q, x.(queued)) }
func (q *queue) Pop() any {
	old := *q
	x := old[len(old)-1]
	old[len(old)-1] = queued{}
	*q = old[:len(old)-1]
	return x
}

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

// QueuePositions counts, for each pending task, the live queue entries
// ahead of it: one pass over the pending queue per task, O(pending).
func (s *Store) QueuePositions(_ context.Context, ids []string) ([]int, error) {
	s.lock()
	defer s.mu.Unlock()
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = -1
		r, ok := s.tasks[id]
		if !ok || r.task.Status != imagegen.StatusPending || r.queued == 0 {
			continue
		}
		mine := queued{runAfter: r.task.RunAfter, seq: r.queued}
		ahead := 0
		for _, q := range s.pending {
			if q.seq == q.rec.queued && q.before(mine) {
				ahead++
			}
		}
		out[i] = ahead
	}
	return out, nil
}
