package memory

// runAfterQueue holds the pending tasks by RunAfter, for QueueStats (how
// many, and the oldest): a binary min-heap whose entries leave lazily.
// An entry is stale once its record is no longer queued under its key
// (claimed, cancelled, or queued again under a new one); stale entries
// are dropped when they reach the top, and the heap is rebuilt from the
// live ones when the stale outnumber them. A push is an append and,
// since tasks mostly queue in RunAfter order, seldom more; the
// order-statistic treap it replaces walked its whole depth a push, a
// cache miss a level once it held many tasks. An entry names its record
// by its slot, so the heap has no pointers for the collector to follow.
type runAfterQueue struct {
	recs *slab
	heap []runAfterEntry
	live int
}

type runAfterEntry struct {
	key  queueKey
	slot slot
}

// stale reports whether e's record has left the queue under e's key (a
// freed slot's record, or another task's, was never queued under it:
// seqs are unique).
func (q *runAfterQueue) stale(e runAfterEntry) bool { return q.recs.at(e.slot).queued != e.key }

// Len reports how many tasks are queued.
func (q *runAfterQueue) Len() int { return q.live }

// push queues the record in slot i under k; its queued must be k
// already.
func (q *runAfterQueue) push(k queueKey, i slot) {
	q.heap = append(q.heap, runAfterEntry{key: k, slot: i})
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
func (q *runAfterQueue) first() (task, bool) {
	q.trim()
	if len(q.heap) == 0 {
		return task{}, false
	}
	return q.recs.at(q.heap[0].slot), true
}

// trim drops stale entries from the top.
func (q *runAfterQueue) trim() {
	for len(q.heap) > 0 && q.stale(q.heap[0]) {
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
		if !q.stale(e) {
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
