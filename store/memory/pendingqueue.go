package memory

// queueKey is a pending task's place in one order of the pending tasks:
// by order (its RunAfter in Unix nanoseconds, or its fair-share tag),
// then by when it was queued. seq is unique in a store; 0 means "not
// queued".
type queueKey struct {
	order int64
	seq   uint64
}

// before reports whether a comes before b.
func (a queueKey) before(b queueKey) bool {
	if a.order != b.order {
		return a.order < b.order
	}
	return a.seq < b.seq
}

// pendingQueue holds the pending tasks in one order. It is a treap
// (a binary search tree on the keys that is also a heap on pseudo-random
// priorities, so it stays balanced in expectation) whose nodes count
// their subtree: the head, a push, a removal and the number of tasks
// ahead of a key each take O(log n) expected time.
//
// A priority is a hash of the key's seq, so the tree's shape is
// deterministic and needs no random source; the store's seqs are unique
// and given in order, which the hash scatters.
//
// A task's node is its record's fair field, and the links are slots in
// the store's slab (0 for none), not pointers: the tree adds nothing
// for the collector to follow.
type pendingQueue struct {
	recs *slab
	root slot
}

type pendingNode struct {
	key         queueKey
	prio        uint64 // at least the children's
	size        uint32 // nodes in this subtree
	left, right slot
	// parked says that the node is in its model's parked queue, not in
	// the model's queue (parked.go), and delayed that it is in the
	// model's delayed set (delayed.go). They fit in the node's padding.
	parked, delayed bool
}

// node returns the node of the record in slot i (not 0).
func (q *pendingQueue) node(i slot) *pendingNode { return &q.recs.at(i).fair }

// push queues the record in slot i at k; its node must not be in a
// queue, and k's seq must not be queued already.
func (q *pendingQueue) push(i slot, k queueKey) {
	n := q.node(i)
	*n = pendingNode{key: k, prio: mix64(k.seq), size: 1}
	// Down from the root while the nodes' priorities are at least n's,
	// counting n in each subtree passed, to the link where n goes: as
	// insert does, but without rewriting every link on the way.
	link := &q.root
	for *link != 0 {
		t := q.node(*link)
		if t.prio < n.prio {
			break
		}
		t.size++
		if k.before(t.key) {
			link = &t.left
		} else {
			link = &t.right
		}
	}
	n.left, n.right = q.split(*link, k)
	q.recount(i)
	*link = i
}

// remove takes the entry at k out of the queue and reports whether it
// was there.
func (q *pendingQueue) remove(k queueKey) bool {
	var ok bool
	q.root, ok = q.removeFrom(q.root, k)
	return ok
}

// head returns the slot of the queue's first entry, or 0 when it is
// empty.
func (q *pendingQueue) head() slot {
	i := q.root
	for i != 0 && q.node(i).left != 0 {
		i = q.node(i).left
	}
	return i
}

// headTag returns the fair-share tag of the queue's first entry, and
// false when it is empty.
func (q *pendingQueue) headTag() (int64, bool) {
	if i := q.head(); i != 0 {
		return q.node(i).key.order, true
	}
	return 0, false
}

// after returns the slot of the first entry after k, or 0 when there is
// none (k itself need not be queued).
func (q *pendingQueue) after(k queueKey) slot {
	var found slot
	for i := q.root; i != 0; {
		t := q.node(i)
		if k.before(t.key) {
			found, i = i, t.left
		} else {
			i = t.right
		}
	}
	return found
}

// ahead counts the entries claimed before k (k itself need not be
// queued).
func (q *pendingQueue) ahead(k queueKey) int {
	n := 0
	for i := q.root; i != 0; {
		t := q.node(i)
		if t.key.before(k) {
			n += q.count(t.left) + 1
			i = t.right
		} else {
			i = t.left
		}
	}
	return n
}

// count is the size of the subtree at i.
func (q *pendingQueue) count(i slot) int {
	if i == 0 {
		return 0
	}
	return int(q.node(i).size)
}

func (q *pendingQueue) recount(i slot) {
	n := q.node(i)
	n.size = uint32(1 + q.count(n.left) + q.count(n.right))
}

// split divides the subtree at i into the entries before k and the
// rest.
func (q *pendingQueue) split(i slot, k queueKey) (before, rest slot) {
	if i == 0 {
		return 0, 0
	}
	n := q.node(i)
	if n.key.before(k) {
		n.right, rest = q.split(n.right, k)
		q.recount(i)
		return i, rest
	}
	before, n.left = q.split(n.left, k)
	q.recount(i)
	return before, i
}

// removeFrom takes the entry at k out of the subtree at i and returns
// the subtree's new root and whether k was there.
func (q *pendingQueue) removeFrom(i slot, k queueKey) (slot, bool) {
	if i == 0 {
		return 0, false
	}
	n := q.node(i)
	var ok bool
	switch {
	case k.before(n.key):
		n.left, ok = q.removeFrom(n.left, k)
	case n.key.before(k):
		n.right, ok = q.removeFrom(n.right, k)
	default:
		return q.merge(n.left, n.right), true
	}
	if ok {
		n.size--
	}
	return i, ok
}

// merge joins the subtrees at a and b (either may be 0), every entry of
// a being before every entry of b, and returns the new root.
func (q *pendingQueue) merge(a, b slot) slot {
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	}
	na, nb := q.node(a), q.node(b)
	if na.prio > nb.prio {
		na.right = q.merge(na.right, b)
		q.recount(a)
		return a
	}
	nb.left = q.merge(a, nb.left)
	q.recount(b)
	return b
}

// mix64 is SplitMix64's finaliser: it scatters consecutive numbers over
// the whole range.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
