package ratelimit

import (
	"hash/maphash"
	"sync"
	"time"
)

// table is a map from K to *E split into shards, each behind its own
// mutex, so that callers on different keys rarely contend. It keeps itself
// bounded: idle entries are swept out (amortised over inserts) and a hard
// cap evicts the least valuable of a few sampled entries.
//
// Callers lock a shard, then use get and insert while holding its lock.
type table[K comparable, E any] struct {
	seed   maphash.Seed
	hash   func(maphash.Seed, K) uint64
	mask   uint64
	shards []shard[K, E]
	// idle reports that e carries no state at now and may be dropped.
	idle func(e *E, now time.Time) bool
	// rank orders entries for eviction at the cap: lowest goes first.
	rank func(e *E, now time.Time) float64
}

type shard[K comparable, E any] struct {
	mu  sync.Mutex
	m   map[K]*E
	max int // at most this many entries
	// untilSweep counts down the inserts until idle entries are swept
	// again: as many as the shard held after the last sweep, so a sweep's
	// cost is amortised over them. Counting inserts, not entries, keeps
	// sweeps going in a shard held at max, where evictions keep the
	// number of entries from ever growing again.
	untilSweep int
	t          *table[K, E]
	_          [64]byte // keep shards on separate cache lines
}

const (
	maxShards = 64
	// minPerShard is the smallest share of the cap one shard gets.
	minPerShard = 64
	// minSweep is the fewest inserts between two sweeps of a shard.
	minSweep = 32
	// evictSample is how many entries are compared to pick one to evict.
	evictSample = 5
	// shrinkMin is the smallest map that is rebuilt after a sweep leaves
	// it mostly empty (Go maps never give memory back on delete).
	shrinkMin = 1024
)

// newTable returns a table for at most maxEntries entries. It uses as many
// shards as it can (up to maxShards, a power of two) while giving each room
// for at least minPerShard entries, so the cap is split into shares that
// are not too coarse; the total never exceeds maxEntries.
func newTable[K comparable, E any](
	maxEntries int,
	hash func(maphash.Seed, K) uint64,
	idle func(*E, time.Time) bool,
	rank func(*E, time.Time) float64,
) *table[K, E] {
	n := 1
	for n*2 <= maxShards && maxEntries/(n*2) >= minPerShard {
		n *= 2
	}
	t := &table[K, E]{
		seed:   maphash.MakeSeed(),
		hash:   hash,
		mask:   uint64(n - 1),
		shards: make([]shard[K, E], n),
		idle:   idle,
		rank:   rank,
	}
	for i := range t.shards {
		s := &t.shards[i]
		s.m = make(map[K]*E)
		s.max = maxEntries / n
		s.untilSweep = minSweep
		s.t = t
	}
	return t
}

// shardFor returns the shard that holds k.
func (t *table[K, E]) shardFor(k K) *shard[K, E] {
	return &t.shards[t.hash(t.seed, k)&t.mask]
}

// len counts the entries, idle ones not yet swept included.
func (t *table[K, E]) len() int {
	n := 0
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		n += len(s.m)
		s.mu.Unlock()
	}
	return n
}

// get returns the entry for k, or nil. The caller holds s.mu.
func (s *shard[K, E]) get(k K) *E { return s.m[k] }

// insert adds e under k, which must not be present, making room first.
// The caller holds s.mu.
func (s *shard[K, E]) insert(k K, e *E, now time.Time) {
	if s.untilSweep--; s.untilSweep <= 0 {
		s.sweep(now)
	}
	for len(s.m) >= s.max {
		s.evict(now)
	}
	s.m[k] = e
}

// sweep drops idle entries. It runs once as many inserts as the shard
// then held have been made since the last sweep (the shard has doubled,
// or, held at max, has turned over), so its cost is amortised over them.
func (s *shard[K, E]) sweep(now time.Time) {
	before := len(s.m)
	for k, e := range s.m {
		if s.t.idle(e, now) {
			delete(s.m, k)
		}
	}
	if before >= shrinkMin && len(s.m) < before/4 {
		m := make(map[K]*E, len(s.m))
		for k, e := range s.m {
			m[k] = e
		}
		s.m = m
	}
	s.untilSweep = max(len(s.m), minSweep)
}

// evict drops the lowest-ranked of a few entries (map iteration starts at a
// random place, so this samples), like Redis's approximate LRU.
func (s *shard[K, E]) evict(now time.Time) {
	var (
		victim K
		best   float64
		seen   int
	)
	for k, e := range s.m {
		if r := s.t.rank(e, now); seen == 0 || r < best {
			victim, best = k, r
		}
		if seen++; seen == evictSample {
			break
		}
	}
	delete(s.m, victim)
}
