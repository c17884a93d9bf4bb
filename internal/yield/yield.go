// Package yield lets other goroutines run before a batch is taken, so
// that the batch is as large as what they are about to add.
package yield

import "runtime"

// WhileGrowing yields the processor (runtime.Gosched) as long as that
// grows the count: n is the count now, next(n) the count after a yield
// (what the other goroutines added meanwhile, taken or only seen). It
// stops at the first yield that adds nothing, or once the count reaches
// limit, and returns the count. A count that does not grow costs one
// yield.
func WhileGrowing(n, limit int, next func(n int) int) int {
	for n < limit {
		runtime.Gosched()
		m := next(n)
		if m == n {
			return n
		}
		n = m
	}
	return n
}
