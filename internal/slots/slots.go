// Package slots bounds how much work is in flight: a Pool holds n
// slots, a worker loop takes every free one at once (so one store call
// can claim that many jobs) and each job gives its slot back when done.
package slots

import "context"

// Pool is a fixed number of slots. The zero value is not usable; make one
// with New.
type Pool chan struct{}

// New returns a pool of n slots (at least 1).
func New(n int) Pool { return make(Pool, max(n, 1)) }

// TakeFree waits for one free slot, then takes every other slot free at
// that moment, and returns how many it took: 0 once ctx has ended.
func (p Pool) TakeFree(ctx context.Context) int {
	if ctx.Err() != nil {
		return 0
	}
	select {
	case p <- struct{}{}:
	case <-ctx.Done():
		return 0
	}
	return 1 + p.TakeMore()
}

// TakeMore takes every slot free at the moment, without waiting, and
// returns how many it took.
func (p Pool) TakeMore() int {
	n := 0
	for n < cap(p) {
		select {
		case p <- struct{}{}:
			n++
		default:
			return n
		}
	}
	return n
}

// Give returns n slots to the pool.
func (p Pool) Give(n int) {
	for range n {
		<-p
	}
}
