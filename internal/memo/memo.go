// Package memo remembers a costly string function's results for the
// arguments seen last, so that a caller who repeats an argument (a
// client's API key on each of its requests) pays for it once.
package memo

import (
	"crypto/subtle"
	"hash/maphash"
	"strings"
	"sync/atomic"
)

// slots is how many arguments a Strings remembers at most.
const slots = 256

// Strings is f with a memory: a fixed number of slots, picked by a
// seeded hash of the argument, each holding the last argument seen
// there and f of it. Arguments are compared in constant time, so that
// secrets (API keys) may be arguments. Safe for concurrent use.
type Strings struct {
	f     func(string) string
	seed  maphash.Seed
	slots [slots]atomic.Pointer[entry]
}

type entry struct{ arg, result string }

// New returns f with a memory of its recent arguments.
func New(f func(string) string) *Strings { return &Strings{f: f, seed: maphash.MakeSeed()} }

// Of returns f(arg).
func (m *Strings) Of(arg string) string {
	slot := &m.slots[maphash.String(m.seed, arg)%slots]
	if e := slot.Load(); e != nil && len(e.arg) == len(arg) && subtle.ConstantTimeCompare([]byte(e.arg), []byte(arg)) == 1 {
		return e.result
	}
	e := &entry{arg: strings.Clone(arg), result: m.f(arg)} // the clone: arg may point into a request's buffers
	slot.Store(e)
	return e.result
}
