package memory

// taskExpiryQueue orders finished tasks by removal time: a minHeap of
// entries with no pointers for the collector to follow. An entry whose
// task has gone, or has another expiry now (a requeued task), is
// skipped when popped.
type taskExpiryQueue = minHeap[taskExpiry]

type taskExpiry struct {
	at   stamp
	task taskSlot
}

func (e taskExpiry) before(o taskExpiry) bool { return e.at.before(o.at) }
