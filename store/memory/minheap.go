package memory

// minHeap is a container/heap of E, the earliest (by E's before) on
// top: the store's expiry queues.
type minHeap[E interface{ before(E) bool }] []E

func (q minHeap[E]) Len() int           { return len(q) }
func (q minHeap[E]) Less(i, j int) bool { return q[i].before(q[j]) }
func (q minHeap[E]) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *minHeap[E]) Push(x any)        { *q = append(*q, x.(E)) }
func (q *minHeap[E]) Pop() any {
	old := *q
	x := old[len(old)-1]
	var zero E
	old[len(old)-1] = zero // keeps nothing of it (an expiry's id)
	*q = old[:len(old)-1]
	return x
}
