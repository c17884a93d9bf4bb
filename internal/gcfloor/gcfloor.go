// Package gcfloor keeps the Go garbage collector from running every
// megabyte or so while a process's live heap is small.
//
// The collector starts a cycle when the heap has grown by GOGC percent
// of what the last cycle found live, or at the runtime's 4 MiB minimum.
// A server whose live heap is a few megabytes (serve holds about 3 MiB
// of package tables and caches at start) then collects after every
// 1–2 MiB it allocates, each cycle marking the whole live heap and the
// globals: on a busy API that was about a tenth of the CPU a request
// cost, where a process with a near-empty heap collects once per 4 MiB
// and marks almost nothing.
//
// Keep allocates a floor: one block of n bytes that holds no pointers
// and is never written. The collector counts it as live, so a cycle
// starts once the heap has grown by GOGC percent of the floor plus
// what is live, but it has nothing to scan in it, and the operating
// system gives the block's pages memory only when they are written,
// which they never are: the process's resident memory grows by what
// the longer interval between cycles lets it allocate, not by the
// floor. Once the live heap is much larger than the floor (a memory
// store holding many tasks) it changes little.
package gcfloor

import "runtime"

// Keep puts a floor of n bytes under the heap (none when n <= 0) until
// the returned function is called.
func Keep(n int) (release func()) {
	if n <= 0 {
		return func() {}
	}
	floor := make([]byte, n) // pointer-free, never written: no pages, nothing to scan
	return func() { runtime.KeepAlive(floor) }
}
