package memory

// runAfterQueue holds the pending tasks by RunAfter, for QueueStats (how
// many, and the oldest): a binary min-heap whose entries leave lazily.
// An entry is stale once its record is no longer queued under its key
// (claimed, cancelled, or queued again under a new one); stale entries
// are dropped when they reach the top, and the heap is rebuilt from the
// live ones when the stale outnumber them. A push is an append and,
// since tasks mostly queue in RunAfter order, seldom more; the
// order-statistic treap it replaces walked its whole depth a push, a
// cache miss a level once it held many tasks, and kept three more
// pointers a task for the collector to mark.
type runAfterQueue struct {
	heap []runAfterEntry
	live int
}

type runAfterEntry struct {
	key queueKey
	rec *record
}

// stale reports whether e's record has left the queue under e's key.
func (e runAfterEntry) stale() bool { return e.rec.queued != e.key }

// Len reports how many tasks are queued.
func (q *runAfterQueue) Len() int { return q.live }

// push queues rec under k; rec.queued must be k already.
func (q *runAfterQueue) push(k queueKey, rec *record) {
	q.heap = append(q.heap, runAfterEntry{key: k, rec: rec})
	q.up(len(q.heap) - 1)
	q.live++
}

// removed notes that a queued record left the queue: its rec.queued no
// longer holds the key it was pushed under.
func (q *runAfterQueue) removed() {
	q.live--
	q.trim()
	if stale := len(q.heap) - q.live; stale > 64 && stale > q.live {
		q.rebuild()
	}
}

// first returns the queued record with the earliest key.
func (q *runAfterQueue) first() (*record, bool) {
	q.trim()
	if len(q.heap) == 0 {
		return nil, false
	}
	return q.heap[0].rec, true
}

// trim drops stale entries from the top.
func (q *runAfterQueue) trim() {
	for len(q.heap) > 0 && q.heap[0].stale() {
		last := len(q.heap) - 1
		q.heap[0] = q.heap[last]
		q.heap[last] = runAfterEntry{}
		q.heap = q.heap[:last]
		q.down(0)
	}
}

// rebuild keeps the live entries only, and makes them a heap again.
func (q *runAfterQueue) rebuild() {
	live := q.heap[:0]
	for _, e := range q.heap {
		if !e.stale() {
			live = append(live, e)
		}
	}
	clear(q.heap[len(live):])
	q.heap = live
	for i := len(q.heap)/2 - 1; i >= 0; i-- {
		q.down(i)
	}
}

func (q *runAfterQueue) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !q.heap[i].key.before(q.heap[parent].key) {
			return
		}
		q.heap[i], q.heap[parent] = q.heap[parent], q.heap[i]
		i = parent
	}
}

func (q *runAfterQueue) down(i int) {
	for {
		least, l, r := i, 2*i+1, 2*i+2
		if l < len(q.heap) && q.heap[l].key.before(q.heap[least].key) {
			least = l
		}
		if r < len(q.heap) && q.heap[r].key.before(q.heap[least].key) {
			least = r
		}
		if least == i {
			return
		}
		q.heap[i], q.heap[least] = q.heap[least], q.heap[i]
		i = least
	}
}
