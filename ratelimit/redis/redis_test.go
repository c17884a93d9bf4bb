package redis_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/google/uuid"
	"github.com/matryer/is"
	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv/redistest"
	"github.com/imagegen/imagegen/ratelimit/limitertest"
	"github.com/imagegen/imagegen/ratelimit/redis"
)

// start is where miniredis's clock starts in these tests.
var start = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// newMiniredis starts a miniredis whose clock reads start, and returns it
// with a client.
func newMiniredis(t testing.TB) (*miniredis.Miniredis, *goredis.Client) {
	t.Helper()
	mr := miniredis.RunT(t)
	mr.SetTime(start)
	return mr, newClient(t, mr)
}

// newClient returns one more client of mr, as another process would have.
func newClient(t testing.TB, mr *miniredis.Miniredis) *goredis.Client {
	t.Helper()
	rdb := goredis.NewClient(&goredis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// advance moves miniredis's clock (which TIME reads, in scripts too) and
// its TTLs together.
func advance(mr *miniredis.Miniredis) func(time.Duration) {
	var mu sync.Mutex
	now := start
	return func(d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(d)
		mr.SetTime(now)
		mr.FastForward(d)
	}
}

func newRedis(t testing.TB, rdb goredis.UniversalClient, cfg redis.Config) *redis.Limiter {
	t.Helper()
	lim, err := redis.New(rdb, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return lim
}

// TestMiniredis runs the suite on miniredis with the server's clock:
// the script reads TIME, and Advance moves miniredis's time and TTLs.
func TestMiniredis(t *testing.T) {
	limitertest.Run(t, func(t *testing.T, limit int, window time.Duration) limitertest.Harness {
		mr, rdb := newMiniredis(t)
		lim := newRedis(t, rdb, redis.Config{Limit: limit, Window: window})
		return limitertest.Harness{Limiter: lim, Advance: advance(mr)}
	})
}

// TestMiniredisInjectedClock runs the suite on miniredis with
// Config.Now, as TestReal does on a real server.
func TestMiniredisInjectedClock(t *testing.T) {
	limitertest.Run(t, func(t *testing.T, limit int, window time.Duration) limitertest.Harness {
		_, rdb := newMiniredis(t)
		clock := imagegentest.NewClock(time.Time{})
		lim := newRedis(t, rdb, redis.Config{Limit: limit, Window: window, Now: clock.Now})
		return limitertest.Harness{Limiter: lim, Advance: clock.Advance}
	})
}

// TestReal runs the suite on the Redis server named by
// IMAGEGEN_TEST_REDIS, each subtest under its own key prefix, with an
// injected clock (a real server's time cannot be moved).
func TestReal(t *testing.T) {
	rdb := realRedis(t)
	limitertest.Run(t, func(t *testing.T, limit int, window time.Duration) limitertest.Harness {
		clock := imagegentest.NewClock(time.Time{})
		lim := newIsolated(t, rdb, redis.Config{Limit: limit, Window: window, Now: clock.Now})
		return limitertest.Harness{Limiter: lim, Advance: clock.Advance}
	})
}

// TestRealCluster runs the suite on a Redis Cluster of three masters
// that the test starts (when IMAGEGEN_TEST_REDIS is set), where the
// calls of a batch are a script run each: their keys are in different
// slots.
func TestRealCluster(t *testing.T) {
	rdb := redistest.StartCluster(t, 3).Client(t)
	limitertest.Run(t, func(t *testing.T, limit int, window time.Duration) limitertest.Harness {
		clock := imagegentest.NewClock(time.Time{})
		lim := newIsolated(t, rdb, redis.Config{Limit: limit, Window: window, Now: clock.Now})
		return limitertest.Harness{Limiter: lim, Advance: clock.Advance}
	})
}

// TestRealServerTime checks the script's own clock (TIME) on a real
// server: the window is long enough that no request leaves it during the
// test.
func TestRealServerTime(t *testing.T) {
	is := is.New(t)
	rdb := realRedis(t)
	const limit, window = 5, time.Hour
	lim := newIsolated(t, rdb, redis.Config{Limit: limit, Window: window})
	ctx := context.Background()
	began := time.Now()
	for i := range limit {
		res, err := lim.Allow(ctx, "user")
		is.NoErr(err)
		is.True(res.Allowed)
		is.Equal(res.Remaining, limit-1-i)
	}
	res, err := lim.Allow(ctx, "user")
	is.NoErr(err)
	is.True(!res.Allowed) // the limit holds on server time
	elapsed := time.Since(began)
	is.True(res.RetryAfter <= window)         // at most a window
	is.True(res.RetryAfter >= window-elapsed) // the first request was made after began
	is.Equal(res.Reset, res.RetryAfter)

	keys := scanKeys(t, rdb, lim.KeyPattern())
	is.Equal(len(keys), 1) // one key, and it is user's
	is.True(strings.HasSuffix(keys[0], ":user}:log"))
	ttl, err := rdb.PTTL(ctx, keys[0]).Result()
	is.NoErr(err)
	// The key expires a window after its last request, made after began;
	// PTTL answered before now (both to the millisecond).
	elapsed = time.Since(began)
	is.True(ttl > window-elapsed-2*time.Millisecond && ttl <= window)
}

// TestSharedBetweenProcesses runs two limiters on two clients of one
// server, as two processes would: they share one limit.
func TestSharedBetweenProcesses(t *testing.T) {
	servers := map[string]func(t *testing.T) (a, b goredis.UniversalClient, cfg redis.Config){
		"miniredis": func(t *testing.T) (a, b goredis.UniversalClient, cfg redis.Config) {
			mr, rdb := newMiniredis(t)
			return rdb, newClient(t, mr), redis.Config{}
		},
		"real": func(t *testing.T) (a, b goredis.UniversalClient, cfg redis.Config) {
			a = realRedis(t)
			b = realRedis(t)
			cfg = redis.Config{Prefix: "imagegen-test:" + uuid.NewString() + ":"}
			t.Cleanup(func() { deleteKeys(t, a, newRedis(t, a, cfg).KeyPattern()) })
			return a, b, cfg
		},
	}
	for name, server := range servers {
		t.Run(name, func(t *testing.T) {
			t.Run("Sequential", func(t *testing.T) {
				is := is.New(t)
				a, b, cfg := server(t)
				limA, limB := newRedis(t, a, cfg), newRedis(t, b, cfg) // default: 10 a minute
				ctx := context.Background()
				for i := range 10 {
					lim := limA
					if i%2 == 1 {
						lim = limB
					}
					res, err := lim.Allow(ctx, "shared")
					is.NoErr(err)
					is.True(res.Allowed)
					is.Equal(res.Remaining, 9-i) // each sees the other's requests
				}
				for _, lim := range []*redis.Limiter{limA, limB} {
					res, err := lim.Allow(ctx, "shared")
					is.NoErr(err)
					is.True(!res.Allowed) // the 11th is refused on either
				}
			})
			t.Run("Concurrent", func(t *testing.T) {
				is := is.New(t)
				a, b, cfg := server(t)
				lims := []*redis.Limiter{newRedis(t, a, cfg), newRedis(t, b, cfg)}
				var (
					wg      sync.WaitGroup
					mu      sync.Mutex
					allowed int
					errs    []error
				)
				for g := range 40 {
					wg.Go(func() {
						res, err := lims[g%2].Allow(context.Background(), "shared")
						mu.Lock()
						defer mu.Unlock()
						if err != nil {
							errs = append(errs, err)
						} else if res.Allowed {
							allowed++
						}
					})
				}
				wg.Wait()
				is.Equal(len(errs), 0)
				is.Equal(allowed, 10) // 10 in total across both processes
			})
		})
	}
}

// TestKeysExpire checks that memory is bounded: a key is gone a
// window after its last accepted request, and a refused request does not
// keep it alive.
func TestKeysExpire(t *testing.T) {
	is := is.New(t)
	mr, rdb := newMiniredis(t)
	adv := advance(mr)
	const window = time.Minute
	lim := newRedis(t, rdb, redis.Config{Limit: 2, Window: window})
	ctx := context.Background()
	for _, key := range []string{"a", "b", "c"} {
		_, err := lim.Allow(ctx, key)
		is.NoErr(err)
	}
	is.Equal(len(mr.Keys()), 3)
	is.Equal(mr.TTL("{imagegen:rl:a}:log"), window)

	adv(10 * time.Second)
	_, err := lim.Allow(ctx, "a") // accepted: a's key now lives until 70s
	is.NoErr(err)
	is.Equal(mr.TTL("{imagegen:rl:a}:log"), window)
	adv(10 * time.Second)
	res, err := lim.Allow(ctx, "a") // refused: does not extend it
	is.NoErr(err)
	is.True(!res.Allowed)
	is.Equal(mr.TTL("{imagegen:rl:a}:log"), window-10*time.Second)

	adv(window - 20*time.Second) // t = 60s: b and c are gone
	is.Equal(mr.Keys(), []string{"{imagegen:rl:a}:log"})
	adv(10 * time.Second) // t = 70s: a is gone
	is.Equal(len(mr.Keys()), 0)
}

// TestKeyLayout pins the key names: the prefix and the key, all in a
// hash tag, and a KeyPattern that matches only them.
func TestKeyLayout(t *testing.T) {
	is := is.New(t)
	mr, rdb := newMiniredis(t)
	ctx := context.Background()
	def := newRedis(t, rdb, redis.Config{})
	odd := newRedis(t, rdb, redis.Config{Prefix: "p*[x]:"})
	_, err := def.Allow(ctx, "user-1")
	is.NoErr(err)
	_, err = odd.Allow(ctx, "user-2")
	is.NoErr(err)
	is.Equal(mr.Keys(), []string{"{imagegen:rl:user-1}:log", "{p*[x]:user-2}:log"})
	is.Equal(def.KeyPattern(), "{imagegen:rl:*")
	is.Equal(odd.KeyPattern(), `{p\*\[x\]:*`)
	for _, tt := range []struct {
		lim  *redis.Limiter
		want string
	}{{def, "{imagegen:rl:user-1}:log"}, {odd, "{p*[x]:user-2}:log"}} {
		keys, err := rdb.Keys(ctx, tt.lim.KeyPattern()).Result()
		is.NoErr(err)
		is.Equal(keys, []string{tt.want}) // the pattern matches its own keys only
	}
	// The log holds each accepted request's time in microseconds, 16
	// digits each, oldest first.
	_, err = def.Allow(ctx, "user-1")
	is.NoErr(err)
	log, err := rdb.Get(ctx, "{imagegen:rl:user-1}:log").Result()
	is.NoErr(err)
	at := fmt.Sprintf("%016d", start.UnixMicro())
	is.Equal(log, at+at) // miniredis's clock has not moved

	// Above MaxLogLimit, a key is a sorted set: one member per request,
	// scored by its time in microseconds.
	big := newRedis(t, rdb, redis.Config{Limit: redis.MaxLogLimit + 1, Prefix: "big:"})
	_, err = big.Allow(ctx, "user-3")
	is.NoErr(err)
	zs, err := rdb.ZRangeWithScores(ctx, "{big:user-3}", 0, -1).Result()
	is.NoErr(err)
	is.Equal(len(zs), 1)
	is.Equal(zs[0].Score, float64(start.UnixMicro()))
}

// TestClockStepsBack: a request made while the server's clock reads
// earlier than the key's newest request counts at the newest one, as in
// Memory.
func TestClockStepsBack(t *testing.T) {
	is := is.New(t)
	mr, rdb := newMiniredis(t)
	lim := newRedis(t, rdb, redis.Config{Limit: 2, Window: time.Minute})
	ctx := context.Background()
	mr.SetTime(start.Add(30 * time.Second))
	_, err := lim.Allow(ctx, "k")
	is.NoErr(err)
	mr.SetTime(start) // the clock jumps back 30s
	res, err := lim.Allow(ctx, "k")
	is.NoErr(err)
	is.True(res.Allowed)
	is.Equal(res.Reset, time.Minute) // counted at the newest request
	res, err = lim.Allow(ctx, "k")
	is.NoErr(err)
	is.True(!res.Allowed)
	is.Equal(res.RetryAfter, time.Minute)
}

// TestMixedLimits: a limiter with a lower limit on a key that another
// one filled further waits until enough requests leave the window.
func TestMixedLimits(t *testing.T) {
	is := is.New(t)
	mr, rdb := newMiniredis(t)
	adv := advance(mr)
	ctx := context.Background()
	high := newRedis(t, rdb, redis.Config{Limit: 4})
	low := newRedis(t, rdb, redis.Config{Limit: 2})
	for range 4 { // t = 0, 1s, 2s, 3s
		_, err := high.Allow(ctx, "k")
		is.NoErr(err)
		adv(time.Second)
	}
	res, err := low.Allow(ctx, "k")
	is.NoErr(err)
	is.True(!res.Allowed)
	is.Equal(res.Remaining, 0)
	is.Equal(res.RetryAfter, 58*time.Second) // at 62s only two are left
}

func TestDefaults(t *testing.T) {
	is := is.New(t)
	_, rdb := newMiniredis(t)
	lim := newRedis(t, rdb, redis.Config{})
	res, err := lim.Allow(context.Background(), "k")
	is.NoErr(err)
	is.Equal(res, imagegen.LimitResult{Allowed: true, Limit: 10, Window: time.Minute, Remaining: 9})
}

func TestConfigValidation(t *testing.T) {
	_, rdb := newMiniredis(t)
	for _, tt := range []struct {
		cfg   redis.Config
		field string
	}{
		{redis.Config{Limit: -1}, "Config.Limit"},
		{redis.Config{Window: -time.Second}, "Config.Window"},
		{redis.Config{Window: time.Microsecond}, "Config.Window"},
		{redis.Config{Window: time.Second + 1}, "Config.Window"},
	} {
		t.Run(tt.field, func(t *testing.T) {
			is := is.New(t)
			lim, err := redis.New(rdb, tt.cfg)
			is.True(err != nil) // invalid config refused
			is.True(lim == nil)
			is.True(strings.Contains(err.Error(), tt.field)) // error names the field
		})
	}
	t.Run("client", func(t *testing.T) {
		is := is.New(t)
		lim, err := redis.New(nil, redis.Config{})
		is.True(err != nil)
		is.True(lim == nil)
	})
}

func TestErrors(t *testing.T) {
	t.Run("ContextCanceled", func(t *testing.T) {
		is := is.New(t)
		_, rdb := newMiniredis(t)
		lim := newRedis(t, rdb, redis.Config{})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := lim.Allow(ctx, "k")
		is.True(errors.Is(err, context.Canceled)) // the cause is wrapped
	})
	t.Run("ServerDown", func(t *testing.T) {
		is := is.New(t)
		mr, _ := newMiniredis(t)
		rdb := goredis.NewClient(&goredis.Options{Addr: mr.Addr(), MaxRetries: -1})
		t.Cleanup(func() { _ = rdb.Close() })
		lim := newRedis(t, rdb, redis.Config{})
		mr.Close()
		res, err := lim.Allow(context.Background(), "k")
		is.True(err != nil)
		is.True(!res.Allowed) // an error never allows
		is.True(strings.Contains(err.Error(), "ratelimit/redis: allow"))
	})
}

// realRedis connects to IMAGEGEN_TEST_REDIS or skips.
func realRedis(t testing.TB) goredis.UniversalClient { return redistest.Connect(t) }

// newIsolated returns a limiter under a fresh prefix and deletes its keys
// (and only its keys) when the test ends.
func newIsolated(t testing.TB, rdb goredis.UniversalClient, cfg redis.Config) *redis.Limiter {
	t.Helper()
	cfg.Prefix = "imagegen-test:" + uuid.NewString() + ":"
	lim := newRedis(t, rdb, cfg)
	t.Cleanup(func() { deleteKeys(t, rdb, lim.KeyPattern()) })
	return lim
}

func scanKeys(t testing.TB, rdb goredis.UniversalClient, pattern string) []string {
	return redistest.Keys(t, rdb, pattern)
}

func deleteKeys(t testing.TB, rdb goredis.UniversalClient, pattern string) {
	redistest.DeleteKeys(t, rdb, pattern)
}
