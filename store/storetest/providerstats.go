package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
)

// testProviderStats: counts added in per-minute buckets add up across
// adds (and within one), are summed over the window asked for by the
// store's clock, and are gone after imagegen.ProviderStatsRetention.
func testProviderStats(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	read := func(window time.Duration) imagegen.ProviderStats {
		t.Helper()
		st, err := s.ProviderStats(ctx, window)
		is.NoErr(err)
		return imagegen.SumProviderStats(st) // the store's order is free
	}
	is.True(read(time.Hour).Empty())
	is.NoErr(s.AddProviderStats(ctx, imagegen.ProviderStats{})) // nothing to add
	is.True(read(time.Hour).Empty())

	is.NoErr(s.AddProviderStats(ctx, imagegen.ProviderStats{
		Requests: []imagegen.ProviderCount{
			{Provider: "fal", Outcome: imagegen.OutcomeSuccess, N: 2},
			{Provider: "fal", Outcome: imagegen.OutcomeUnavailable, N: 1},
			{Provider: "openai", Outcome: imagegen.OutcomeSuccess, N: 1},
			{Provider: "fal", Outcome: imagegen.OutcomeSuccess, N: 1}, // a repeat adds up
		},
		Fallbacks: []imagegen.FallbackCount{{From: "fal", To: "openai", N: 1}},
	}))
	h.Advance(imagegen.ProviderStatsBucket + time.Second) // the next minute's bucket
	latest := imagegen.ProviderStats{
		Requests:  []imagegen.ProviderCount{{Provider: "fal", Outcome: imagegen.OutcomeSuccess, N: 4}},
		Fallbacks: []imagegen.FallbackCount{{From: "fal", To: "openai", N: 2}, {From: "openai", To: "fal", N: 1}},
	}
	is.NoErr(s.AddProviderStats(ctx, latest))

	all := imagegen.ProviderStats{
		Requests: []imagegen.ProviderCount{
			{Provider: "fal", Outcome: imagegen.OutcomeSuccess, N: 7},
			{Provider: "fal", Outcome: imagegen.OutcomeUnavailable, N: 1},
			{Provider: "openai", Outcome: imagegen.OutcomeSuccess, N: 1},
		},
		Fallbacks: []imagegen.FallbackCount{{From: "fal", To: "openai", N: 3}, {From: "openai", To: "fal", N: 1}},
	}
	is.Equal(read(time.Hour), all)
	is.Equal(read(0), latest) // the current minute only

	h.Advance(2 * time.Hour)
	is.True(read(time.Hour).Empty()) // nothing in the last hour
	is.Equal(read(3*time.Hour), all) // but kept

	h.Advance(imagegen.ProviderStatsRetention)
	is.True(read(imagegen.ProviderStatsRetention).Empty())
	is.True(read(2 * imagegen.ProviderStatsRetention).Empty()) // windows end at the retention
}

// testProviderStatsConcurrent: flushes of many workers at once neither
// lose counts nor fail (on a database: no deadlock between their rows).
func testProviderStatsConcurrent(t *testing.T, h Harness) {
	is := is.New(t)
	const workers, flushes = 8, 5
	one := imagegen.ProviderStats{
		Requests: []imagegen.ProviderCount{
			{Provider: "a", Outcome: imagegen.OutcomeSuccess, N: 1},
			{Provider: "b", Outcome: imagegen.OutcomeTimeout, N: 2},
			{Provider: "c", Outcome: imagegen.OutcomeSuccess, N: 3},
		},
		Fallbacks: []imagegen.FallbackCount{{From: "b", To: "c", N: 1}},
	}
	errs := make(chan error, workers*flushes)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range flushes {
				errs <- h.Store.AddProviderStats(ctx, one)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		is.NoErr(err)
	}
	got, err := h.Store.ProviderStats(ctx, time.Hour)
	is.NoErr(err)
	n := int64(workers * flushes)
	is.Equal(imagegen.SumProviderStats(got), imagegen.ProviderStats{
		Requests: []imagegen.ProviderCount{
			{Provider: "a", Outcome: imagegen.OutcomeSuccess, N: n},
			{Provider: "b", Outcome: imagegen.OutcomeTimeout, N: 2 * n},
			{Provider: "c", Outcome: imagegen.OutcomeSuccess, N: 3 * n},
		},
		Fallbacks: []imagegen.FallbackCount{{From: "b", To: "c", N: n}},
	})
}
