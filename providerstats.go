package imagegen

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Provider statistics are the outcomes of provider calls and the moves of
// fallback chains, counted for operators across every process on a
// store. Workers count them in memory as generations run and write the
// counts to the store every ProviderStatsFlushInterval (and when Run
// stops), as increments of per-minute buckets: a store write every few
// seconds per worker process, never one per generation. Stores keep the
// buckets for ProviderStatsRetention; Inspector.ProviderStats sums them.
// (The Observer sees the same events, per process, for metrics.)
const (
	ProviderStatsBucket        = time.Minute
	ProviderStatsRetention     = 24 * time.Hour
	ProviderStatsFlushInterval = 5 * time.Second
)

// ProviderCount is how many calls to a provider ended with one outcome.
type ProviderCount struct {
	Provider string
	Outcome  string // as ProviderOutcome names it: success, unavailable, timeout...
	N        int64
}

// FallbackCount is how many times fallback chains moved on from one
// model to the next.
type FallbackCount struct {
	From, To string
	N        int64
}

// ProviderStats counts provider calls by outcome, and fallbacks.
type ProviderStats struct {
	Requests  []ProviderCount
	Fallbacks []FallbackCount
}

// Empty reports whether st counts nothing.
func (st ProviderStats) Empty() bool { return len(st.Requests) == 0 && len(st.Fallbacks) == 0 }

// SumProviderStats adds up the equal entries (same provider and outcome,
// same from and to) of parts, leaves out those that sum to zero or less,
// and sorts the rest: requests by provider then outcome, fallbacks by
// from then to. Stores use it to merge buckets.
func SumProviderStats(parts ...ProviderStats) ProviderStats {
	type pair struct{ a, b string }
	reqs, falls := map[pair]int64{}, map[pair]int64{}
	for _, p := range parts {
		for _, r := range p.Requests {
			reqs[pair{r.Provider, r.Outcome}] += r.N
		}
		for _, f := range p.Fallbacks {
			falls[pair{f.From, f.To}] += f.N
		}
	}
	var out ProviderStats
	for k, n := range reqs {
		if n > 0 {
			out.Requests = append(out.Requests, ProviderCount{Provider: k.a, Outcome: k.b, N: n})
		}
	}
	for k, n := range falls {
		if n > 0 {
			out.Fallbacks = append(out.Fallbacks, FallbackCount{From: k.a, To: k.b, N: n})
		}
	}
	slices.SortFunc(out.Requests, func(x, y ProviderCount) int {
		return cmp.Or(cmp.Compare(x.Provider, y.Provider), cmp.Compare(x.Outcome, y.Outcome))
	})
	slices.SortFunc(out.Fallbacks, func(x, y FallbackCount) int {
		return cmp.Or(cmp.Compare(x.From, y.From), cmp.Compare(x.To, y.To))
	})
	return out
}

// ProviderStats returns the provider calls by outcome and the fallbacks
// counted by every worker on the store in the last window (to the
// minute, at most ProviderStatsRetention), sorted as SumProviderStats
// sorts. Counts a worker has not flushed yet (at most
// ProviderStatsFlushInterval old) are not in it.
func (in *Inspector) ProviderStats(ctx context.Context, window time.Duration) (ProviderStats, error) {
	st, err := in.s.cfg.Store.ProviderStats(ctx, window)
	if err != nil {
		return ProviderStats{}, fmt.Errorf("imagegen: provider stats: %w", err)
	}
	return SumProviderStats(st), nil
}

// FlushProviderStats writes the provider statistics this Service counted
// since its last flush to the store. Run does so every
// ProviderStatsFlushInterval and when it stops; a caller that drives
// generations with RunOnce calls it itself. On failure the counts are
// kept for the next flush.
func (s *Service) FlushProviderStats(ctx context.Context) error {
	st := s.providers.take()
	if st.Empty() {
		return nil
	}
	if err := s.cfg.Store.AddProviderStats(ctx, st); err != nil {
		s.providers.restore(st)
		return fmt.Errorf("imagegen: flush provider stats: %w", err)
	}
	return nil
}

// providerStatsLoop flushes the counts every ProviderStatsFlushInterval
// until ctx ends (Run flushes once more after its generations stop).
func (s *Service) providerStatsLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.cfg.Clock.After(ProviderStatsFlushInterval):
		}
		if err := s.FlushProviderStats(ctx); err != nil && ctx.Err() == nil {
			s.log.WarnContext(ctx, "could not write provider statistics; will try again", "err", err)
		}
	}
}

// finalProviderStatsFlush writes what the last generations counted, once
// Run has stopped them.
func (s *Service) finalProviderStatsFlush(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := s.FlushProviderStats(ctx); err != nil {
		s.log.WarnContext(ctx, "could not write the last provider statistics; they are lost", "err", err)
	}
}

// providerTally counts provider calls and fallbacks in memory between
// flushes. Counting is a map increment under a mutex: cheap enough for
// every provider call.
type providerTally struct {
	mu     sync.Mutex
	counts map[tallyKey]int64
}

// tallyKey is a provider and an outcome, or (fallback) a from and a to.
type tallyKey struct {
	fallback bool
	a, b     string
}

func (t *providerTally) request(provider, outcome string) {
	t.add(tallyKey{a: provider, b: outcome}, 1)
}

func (t *providerTally) fallback(from, to string) {
	t.add(tallyKey{fallback: true, a: from, b: to}, 1)
}

func (t *providerTally) add(k tallyKey, n int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.counts == nil {
		t.counts = map[tallyKey]int64{}
	}
	t.counts[k] += n
}

// take returns the counts so far and starts again from zero.
func (t *providerTally) take() ProviderStats {
	t.mu.Lock()
	counts := t.counts
	t.counts = nil
	t.mu.Unlock()
	var st ProviderStats
	for k, n := range counts {
		if k.fallback {
			st.Fallbacks = append(st.Fallbacks, FallbackCount{From: k.a, To: k.b, N: n})
		} else {
			st.Requests = append(st.Requests, ProviderCount{Provider: k.a, Outcome: k.b, N: n})
		}
	}
	return SumProviderStats(st) // sorted: concurrent flushes write rows in one order
}

// restore adds back counts that could not be flushed.
func (t *providerTally) restore(st ProviderStats) {
	for _, r := range st.Requests {
		t.add(tallyKey{a: r.Provider, b: r.Outcome}, r.N)
	}
	for _, f := range st.Fallbacks {
		t.add(tallyKey{fallback: true, a: f.From, b: f.To}, f.N)
	}
}
