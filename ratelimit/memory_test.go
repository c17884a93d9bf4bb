package ratelimit_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/ratelimit"
	"github.com/imagegen/imagegen/ratelimit/limitertest"
	"github.com/matryer/is"
)

func TestMemory(t *testing.T) {
	limitertest.Run(t, func(t *testing.T, limit int, window time.Duration) limitertest.Harness {
		clock := imagegentest.NewClock(time.Time{})
		lim, err := ratelimit.NewMemory(ratelimit.MemoryConfig{Limit: limit, Window: window, Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		return limitertest.Harness{Limiter: lim, Advance: clock.Advance}
	})
}

func TestMemoryDefaults(t *testing.T) {
	is := is.New(t)
	lim, err := ratelimit.NewMemory(ratelimit.MemoryConfig{Clock: imagegentest.NewClock(time.Time{})})
	is.NoErr(err)
	res, err := lim.Allow(context.Background(), "k")
	is.NoErr(err)
	is.Equal(res.Limit, 10)           // default limit
	is.Equal(res.Window, time.Minute) // default window
	is.Equal(res.Remaining, 9)

	_, err = ratelimit.NewMemory(ratelimit.MemoryConfig{}) // system clock
	is.NoErr(err)
}

func TestMemoryConfigValidation(t *testing.T) {
	for _, tt := range []struct {
		cfg   ratelimit.MemoryConfig
		field string
	}{
		{ratelimit.MemoryConfig{Limit: -1}, "Config.Limit"},
		{ratelimit.MemoryConfig{Window: -time.Second}, "Config.Window"},
		{ratelimit.MemoryConfig{MaxKeys: -5}, "Config.MaxKeys"},
	} {
		t.Run(tt.field, func(t *testing.T) {
			is := is.New(t)
			lim, err := ratelimit.NewMemory(tt.cfg)
			is.True(err != nil) // invalid config refused
			is.True(lim == nil)
			is.True(strings.Contains(err.Error(), tt.field)) // error names the field
		})
	}
}

// TestMemoryEvictsIdleKeys sends a stream of one-off keys for many
// windows: the map must stay near the number of keys live in one window,
// not grow with the total.
func TestMemoryEvictsIdleKeys(t *testing.T) {
	is := is.New(t)
	clock := imagegentest.NewClock(time.Time{})
	lim, err := ratelimit.NewMemory(ratelimit.MemoryConfig{Clock: clock})
	is.NoErr(err)
	const perWindow, windows = 2000, 30
	peak := 0
	for w := range windows {
		for i := range perWindow {
			_, err := lim.Allow(context.Background(), fmt.Sprintf("key-%d-%d", w, i))
			is.NoErr(err)
			clock.Advance(time.Minute / perWindow)
			peak = max(peak, lim.Len())
		}
	}
	// Sweeps run when a shard doubles, so at most about twice the live
	// keys are held (plus a small per-shard floor), never all 60000.
	t.Logf("peak %d keys tracked for %d live", peak, perWindow)
	is.True(peak <= 2*perWindow+64*32) // bounded by live keys, not by total
}

func TestMemoryMaxKeys(t *testing.T) {
	is := is.New(t)
	clock := imagegentest.NewClock(time.Time{})
	const maxKeys = 100
	lim, err := ratelimit.NewMemory(ratelimit.MemoryConfig{Limit: 2, Clock: clock, MaxKeys: maxKeys})
	is.NoErr(err)
	for i := range 10 * maxKeys { // all live in one window
		res, err := lim.Allow(context.Background(), fmt.Sprint("key-", i))
		is.NoErr(err)
		is.True(res.Allowed)
		is.True(lim.Len() <= maxKeys) // hard cap holds
	}
	// The most recent key is kept: it was just used.
	res, err := lim.Allow(context.Background(), fmt.Sprint("key-", 10*maxKeys-1))
	is.NoErr(err)
	is.Equal(res.Remaining, 0) // its earlier request is still counted
}

func TestMemoryClockStepsBack(t *testing.T) {
	is := is.New(t)
	clock := imagegentest.NewClock(time.Time{})
	lim, err := ratelimit.NewMemory(ratelimit.MemoryConfig{Limit: 2, Window: time.Minute, Clock: clock})
	is.NoErr(err)
	start := clock.Now()
	clock.Advance(30 * time.Second)
	_, _ = lim.Allow(context.Background(), "k")
	clock.Set(start) // the clock jumps back 30s
	res, _ := lim.Allow(context.Background(), "k")
	is.True(res.Allowed)
	is.Equal(res.Reset, time.Minute) // treated as happening at the newest stamp
	res, _ = lim.Allow(context.Background(), "k")
	is.True(!res.Allowed)
	is.Equal(res.RetryAfter, time.Minute)
}

func TestMemoryAllowDoesNotAllocate(t *testing.T) {
	is := is.New(t)
	clock := imagegentest.NewClock(time.Time{})
	lim, err := ratelimit.NewMemory(ratelimit.MemoryConfig{Limit: 3, Clock: clock})
	is.NoErr(err)
	ctx := context.Background()
	_, _ = lim.Allow(ctx, "known") // first use creates the key's log
	allocs := testing.AllocsPerRun(100, func() {
		clock.Advance(time.Second) // allowed and refused calls alike
		_, _ = lim.Allow(ctx, "known")
	})
	is.Equal(allocs, 0.0) // a tracked key costs no allocation
}

// TestMemoryForgetsIdleKeysAfterReachingMaxKeys fills the table to its
// cap within one window (a flood of one-off keys), then sends one new
// key a window: the flood's keys are all idle, so they must be swept out
// rather than held at the cap for good.
func TestMemoryForgetsIdleKeysAfterReachingMaxKeys(t *testing.T) {
	is := is.New(t)
	clock := imagegentest.NewClock(time.Time{})
	const maxKeys = 100
	lim, err := ratelimit.NewMemory(ratelimit.MemoryConfig{Limit: 2, Clock: clock, MaxKeys: maxKeys})
	is.NoErr(err)
	ctx := context.Background()
	for i := range 10 * maxKeys { // the flood, all in one window
		_, err := lim.Allow(ctx, fmt.Sprint("flood-", i))
		is.NoErr(err)
	}
	is.Equal(lim.Len(), maxKeys) // at the cap
	for i := range 2 * maxKeys { // then one key a window, each idle when the next comes
		clock.Advance(time.Minute)
		_, err := lim.Allow(ctx, fmt.Sprint("later-", i))
		is.NoErr(err)
	}
	t.Logf("%d keys tracked", lim.Len())
	is.True(lim.Len() < maxKeys/2) // the idle keys were swept, not kept at the cap
}
