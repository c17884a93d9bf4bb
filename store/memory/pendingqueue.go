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
type pendingQueue struct {
	root *pendingNode
}

type pendingNode struct {
	key         queueKey
	rec         *record
	prio        uint64 // at least the children's
	size        int    // nodes in this subtree
	left, right *pendingNode
}

// each calls fn on the entries in order until fn returns false.
func (q *pendingQueue) each(fn func(queueKey, *record) bool) { q.root.each(fn) }

func (n *pendingNode) each(fn func(queueKey, *record) bool) bool {
	for n != nil {
		if !n.left.each(fn) || !fn(n.key, n.rec) {
			return false
		}
		n = n.right
	}
	return true
}

// push queues rec at k in the node n (which the caller keeps, such as
// a field of rec, and which must not be in a queue); k's seq must not
// be queued already.
func (q *pendingQueue) push(n *pendingNode, k queueKey, rec *record) {
	*n = pendingNode{key: k, rec: rec, prio: mix64(k.seq), size: 1}
	// Down from the root while the nodes' priorities are at least n's,
	// counting n in each subtree passed, to the link where n goes: as
	// insert does, but without rewriting every link on the way (each a
	// pointer write, with a write barrier while the collector marks).
	link := &q.root
	for t := *link; t != nil && t.prio >= n.prio; t = *link {
		t.size++
		if k.before(t.key) {
			link = &t.left
		} else {
			link = &t.right
		}
	}
	n.left, n.right = (*link).split(k)
	n.recount()
	*link = n
}

// remove takes the entry at k out of the queue and reports whether it
// was there.
func (q *pendingQueue) remove(k queueKey) bool {
	var ok bool
	q.root, ok = q.root.remove(k)
	return ok
}

// ahead counts the entries claimed before k (k itself need not be
// queued).
func (q *pendingQueue) ahead(k queueKey) int {
	n := 0
	for t := q.root; t != nil; {
		if t.key.before(k) {
			n += t.left.count() + 1
			t = t.right
		} else {
			t = t.left
		}
	}
	return n
}

func (n *pendingNode) count() int {
	if n == nil {
		return 0
	}
	return n.size
}

func (n *pendingNode) recount() {
	n.size = 1 + n.left.count() + n.right.count()
}

// split divides the subtree n into the entries before k and the rest.
func (n *pendingNode) split(k queueKey) (before, rest *pendingNode) {
	if n == nil {
		return nil, nil
	}
	if n.key.before(k) {
		n.right, rest = n.right.split(k)
		n.recount()
		return n, rest
	}
	before, n.left = n.left.split(k)
	n.recount()
	return before, n
}

// remove takes the entry at k out of the subtree n and returns the
// subtree's new root and whether k was there.
func (n *pendingNode) remove(k queueKey) (*pendingNode, bool) {
	if n == nil {
		return nil, false
	}
	var ok bool
	switch {
	case k.before(n.key):
		n.left, ok = n.left.remove(k)
	case n.key.before(k):
		n.right, ok = n.right.remove(k)
	default:
		return n.left.merge(n.right), true
	}
	if ok {
		n.size--
	}
	return n, ok
}

// merge joins the subtrees a and b (either may be nil), every entry of
// a being before every entry of b, and returns the new root.
func (a *pendingNode) merge(b *pendingNode) *pendingNode {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case a.prio > b.prio:
		a.right = a.right.merge(b)
		a.recount()
		return a
	default:
		b.left = a.merge(b.left)
		b.recount()
		return b
	}
}

// mix64 is SplitMix64's finaliser: it scatters consecutive numbers over
// the whole range.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
