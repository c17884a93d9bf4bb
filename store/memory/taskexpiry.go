package memory

// taskExpiryQueue orders finished tasks by removal time: a heap
// (container/heap) of entries with no pointers for the collector to
// follow. An entry whose task has gone, or has another expiry now (a
// requeued task), is skipped when popped.
type taskExpiryQueue []taskExpiry

type taskExpiry struct {
	at   stamp
	task taskSlot
}

func (q taskExpiryQueue) Len() int           { return len(q) }
func (q taskExpiryQueue) Less(i, j int) bool { return q[i].at.before(q[j].at) }
func (q taskExpiryQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *taskExpiryQueue) Push(x any)        { *q = append(*q, x.(taskExpiry)) }
func (q *taskExpiryQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}
