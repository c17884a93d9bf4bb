package imagegen_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/model/route"
)

// statsStore counts the store's AddProviderStats calls and can fail them.
type statsStore struct {
	imagegen.Store
	mu    sync.Mutex
	adds  int
	broke error
}

func (s *statsStore) AddProviderStats(ctx context.Context, st imagegen.ProviderStats) error {
	s.mu.Lock()
	s.adds++
	broke := s.broke
	s.mu.Unlock()
	if broke != nil {
		return broke
	}
	return s.Store.AddProviderStats(ctx, st)
}

func (s *statsStore) calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.adds
}

// The service counts provider outcomes and fallbacks in memory and
// writes them to the store only when flushed, where the inspector reads
// them; a failed flush keeps them for the next.
func TestServiceRecordsProviderStats(t *testing.T) {
	is := is.New(t)
	down := &imagegen.ModelError{Provider: "first", Retryable: true, Message: "503"}
	chain, err := route.NewFallback("chain",
		route.Entry{Name: "first", Model: imagegentest.NewModel(1, imagegentest.Fail(down))},
		route.Entry{Name: "second", Model: imagegentest.NewModel(1)},
	)
	is.NoErr(err)
	var store *statsStore
	f := newFixture(t, nil, func(c *imagegen.Config) {
		c.Model = chain
		store = &statsStore{Store: c.Store}
		c.Store = store
	})
	f.funded(t, "u", 2)
	f.submit(t, "u")
	f.submit(t, "u")
	is.True(f.runOnce(t))      // first: unavailable, fallback, second: success
	is.True(f.runOnce(t))      // first: success
	is.Equal(store.calls(), 0) // no store write per generation

	stats := func() imagegen.ProviderStats {
		st, err := f.svc.Inspector().ProviderStats(ctx, time.Hour)
		is.NoErr(err)
		return st
	}
	is.True(stats().Empty()) // not flushed yet

	store.broke = errors.New("store down")
	is.True(f.svc.FlushProviderStats(ctx) != nil)
	is.True(stats().Empty())
	store.broke = nil
	is.NoErr(f.svc.FlushProviderStats(ctx)) // the counts were kept
	want := imagegen.ProviderStats{
		Requests: []imagegen.ProviderCount{
			{Provider: "first", Outcome: imagegen.OutcomeSuccess, N: 1},
			{Provider: "first", Outcome: imagegen.OutcomeUnavailable, N: 1},
			{Provider: "second", Outcome: imagegen.OutcomeSuccess, N: 1},
		},
		Fallbacks: []imagegen.FallbackCount{{From: "first", To: "second", N: 1}},
	}
	is.Equal(stats(), want)
	is.Equal(store.calls(), 2)

	is.NoErr(f.svc.FlushProviderStats(ctx)) // nothing new: no write
	is.Equal(store.calls(), 2)
	is.Equal(stats(), want) // and nothing counted twice
}

// Run writes the counts every ProviderStatsFlushInterval and once more
// when it stops.
func TestRunFlushesProviderStats(t *testing.T) {
	is := is.New(t)
	flushes := newWaitsClock(imagegen.ProviderStatsFlushInterval) // unlike the fixture's other waits
	f := newFixture(t, imagegentest.NewModel(1), flushes.install)
	f.funded(t, "u", 2)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- f.svc.Run(runCtx) }()

	stats := func() imagegen.ProviderStats {
		st, err := f.svc.Inspector().ProviderStats(ctx, time.Hour)
		is.NoErr(err)
		return st
	}
	succeeded := func(n int64) imagegen.ProviderStats {
		return imagegen.ProviderStats{Requests: []imagegen.ProviderCount{{Provider: "scripted", Outcome: imagegen.OutcomeSuccess, N: n}}}
	}
	done := func() {
		t.Helper()
		task, err := f.svc.WaitTask(ctx, "u", f.submit(t, "u").TaskID, time.Hour) // the clock stands still: no timeout
		is.NoErr(err)
		is.Equal(task.Status, imagegen.StatusSuccess)
	}

	done()
	is.True(stats().Empty()) // the interval has not passed
	flushes.waited(t)        // the flush loop waits for its interval
	f.clock.Advance(imagegen.ProviderStatsFlushInterval)
	flushes.waited(t) // it flushed, and waits for the next interval
	is.Equal(stats(), succeeded(1))

	done() // with the clock standing still, only the stop writes it
	cancel()
	is.NoErr(<-stopped)
	is.Equal(stats(), succeeded(2))
}
