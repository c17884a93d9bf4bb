package memory

import "time"

// queue orders pending tasks by RunAfter, then by submission.
// It implements heap.Interface.
type queue []queued

type queued struct {
	runAfter time.Time
	seq      uint64
	rec      *record
}

func (q queue) Len() int { return len(q) }
func (q queue) Less(i, j int) bool {
	if !q[i].runAfter.Equal(q[j].runAfter) {
		return q[i].runAfter.Before(q[j].runAfter)
	}
	return q[i].seq < q[j].seq
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
