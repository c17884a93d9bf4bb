package memory

import (
	"context"
	"sync"
	"time"

	"github.com/imagegen/imagegen"
)

// providerStats keeps the per-minute buckets of provider statistics,
// under their own mutex: flushes never wait for the task queue.
type providerStats struct {
	mu      sync.Mutex
	buckets map[int64]imagegen.ProviderStats // by minute (Unix time / 60)
}

func minuteOf(t time.Time) int64 { return t.Unix() / int64(imagegen.ProviderStatsBucket/time.Second) }

// AddProviderStats adds st to the current minute's bucket and drops the
// buckets older than imagegen.ProviderStatsRetention.
func (s *Store) AddProviderStats(_ context.Context, st imagegen.ProviderStats) error {
	if st.Empty() {
		return nil
	}
	p := &s.provStats
	now := minuteOf(s.clock.Now())
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.buckets == nil {
		p.buckets = map[int64]imagegen.ProviderStats{}
	}
	p.buckets[now] = imagegen.SumProviderStats(p.buckets[now], st)
	oldest := now - int64(imagegen.ProviderStatsRetention/imagegen.ProviderStatsBucket)
	for m := range p.buckets {
		if m < oldest {
			delete(p.buckets, m)
		}
	}
	return nil
}

// ProviderStats sums the buckets of the last window.
func (s *Store) ProviderStats(_ context.Context, window time.Duration) (imagegen.ProviderStats, error) {
	now := s.clock.Now()
	from, to := minuteOf(now.Add(-min(max(window, 0), imagegen.ProviderStatsRetention))), minuteOf(now)
	p := &s.provStats
	p.mu.Lock()
	defer p.mu.Unlock()
	var parts []imagegen.ProviderStats
	for m, st := range p.buckets {
		if m >= from && m <= to {
			parts = append(parts, st)
		}
	}
	return imagegen.SumProviderStats(parts...), nil
}
