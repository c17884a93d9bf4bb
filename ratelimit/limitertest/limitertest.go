// Package limitertest is the conformance suite for imagegen.Limiter
// implementations. Every limiter's tests call Run, so the semantics are
// pinned down once for all backends:
//
//   - a key may make at most limit requests in any rolling window: a
//     request accepted at t counts against requests made before t+window;
//   - a refused request is not recorded;
//   - LimitResult fields follow imagegen.LimitResult: Remaining counts the
//     requests still possible after this one, Reset is 0 while Remaining
//     is above 0 and otherwise the time until one more request is allowed,
//     RetryAfter is that same time on a refusal and 0 on an acceptance.
//
// The suite moves time only through Harness.Advance and only by whole
// milliseconds, so a backend whose clock has millisecond precision (such
// as one that reads time inside Redis) passes it. Every key it uses is
// unique, so a shared server never sees two tests on one key.
package limitertest

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/imagegen/imagegen"
	"github.com/matryer/is"
)

// Harness is one fresh limiter under test and a way to move its time.
type Harness struct {
	Limiter imagegen.Limiter
	// Advance moves the limiter's clock forward by d (d > 0).
	Advance func(d time.Duration)
}

// NewFunc returns a fresh limiter that allows limit requests per rolling
// window. It is called once per subtest.
type NewFunc func(t *testing.T, limit int, window time.Duration) Harness

// Run runs the whole suite against limiters made by newLimiter.
func Run(t *testing.T, newLimiter NewFunc) {
	t.Helper()
	tests := []struct {
		name string
		run  func(*testing.T, NewFunc)
	}{
		{"FirstNAllowedThenRefused", testFirstNAllowedThenRefused},
		{"RetryAfterIsExact", testRetryAfterIsExact},
		{"RemainingAndResetCountDown", testRemainingAndResetCountDown},
		{"RollingWindow", testRollingWindow},
		{"RollingWindowSpread", testRollingWindowSpread},
		{"NoBurstAtWindowBoundary", testNoBurstAtWindowBoundary},
		{"KeysAreIndependent", testKeysAreIndependent},
		{"RefusedRequestsDoNotCount", testRefusedRequestsDoNotCount},
		{"IdleKeyStartsAfresh", testIdleKeyStartsAfresh},
		{"LimitOne", testLimitOne},
		{"LargeLimit", testLargeLimit},
		{"ShortWindow", testShortWindow},
		{"ConcurrentOneKey", testConcurrentOneKey},
		{"ConcurrentManyKeys", testConcurrentManyKeys},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, newLimiter) })
	}
}

// newKey returns a key no other test uses.
func newKey() string { return "limitertest:" + uuid.NewString() }

// allow calls Allow and checks the fields every result must have right.
func allow(t *testing.T, h Harness, key string, limit int, window time.Duration) imagegen.LimitResult {
	t.Helper()
	is := is.NewRelaxed(t)
	res, err := h.Limiter.Allow(context.Background(), key)
	is.NoErr(err)
	is.Equal(res.Limit, limit)   // Limit echoes the policy
	is.Equal(res.Window, window) // Window echoes the policy
	is.True(res.Remaining >= 0 && res.Remaining < limit)
	if res.Allowed {
		is.Equal(res.RetryAfter, time.Duration(0)) // no RetryAfter when allowed
	} else {
		is.Equal(res.Remaining, 0)          // nothing remains when refused
		is.True(res.RetryAfter > 0)         // a refusal says when to retry
		is.Equal(res.Reset, res.RetryAfter) // Reset equals RetryAfter when refused
	}
	if res.Remaining > 0 {
		is.Equal(res.Reset, time.Duration(0)) // Reset is 0 while requests remain
	} else {
		is.True(res.Reset > 0 && res.Reset <= window) // Reset says when one more is allowed
	}
	return res
}

// mustAllow asserts that the next request is allowed with want remaining.
func mustAllow(t *testing.T, h Harness, key string, limit int, window time.Duration, remaining int) imagegen.LimitResult {
	t.Helper()
	res := allow(t, h, key, limit, window)
	if !res.Allowed || res.Remaining != remaining {
		t.Fatalf("Allow = {Allowed:%v Remaining:%d}, want allowed with %d remaining",
			res.Allowed, res.Remaining, remaining)
	}
	return res
}

// useUp makes limit requests at once, asserting that each is allowed
// with one fewer remaining.
func useUp(t *testing.T, h Harness, key string, limit int, window time.Duration) {
	t.Helper()
	for i := range limit {
		mustAllow(t, h, key, limit, window, limit-1-i)
	}
}

// mustRefuse asserts that the next request is refused with retryAfter.
func mustRefuse(t *testing.T, h Harness, key string, limit int, window, retryAfter time.Duration) {
	t.Helper()
	res := allow(t, h, key, limit, window)
	if res.Allowed || res.RetryAfter != retryAfter {
		t.Fatalf("Allow = {Allowed:%v RetryAfter:%v}, want refused with RetryAfter %v",
			res.Allowed, res.RetryAfter, retryAfter)
	}
}

func testFirstNAllowedThenRefused(t *testing.T, newLimiter NewFunc) {
	const limit, window = 10, time.Minute
	h := newLimiter(t, limit, window)
	key := newKey()
	useUp(t, h, key, limit, window)
	mustRefuse(t, h, key, limit, window, window)
	mustRefuse(t, h, key, limit, window, window)
}

func testRetryAfterIsExact(t *testing.T, newLimiter NewFunc) {
	const limit, window = 10, time.Minute
	h := newLimiter(t, limit, window)
	key := newKey()
	for i := range limit { // one request a second, t = 0s..9s
		mustAllow(t, h, key, limit, window, limit-1-i)
		h.Advance(time.Second)
	}
	// t = 10s: the oldest, from t = 0, leaves the window at t = 60s.
	mustRefuse(t, h, key, limit, window, 50*time.Second)
	h.Advance(50*time.Second - time.Millisecond)
	mustRefuse(t, h, key, limit, window, time.Millisecond)
	h.Advance(time.Millisecond) // t = 60s
	mustAllow(t, h, key, limit, window, 0)
	mustRefuse(t, h, key, limit, window, time.Second) // next leaves at 61s
}

func testRemainingAndResetCountDown(t *testing.T, newLimiter NewFunc) {
	is := is.New(t)
	const limit, window = 5, time.Minute
	h := newLimiter(t, limit, window)
	key := newKey()
	for i := range limit { // t = 0, 2s, 4s, 6s, 8s
		res := mustAllow(t, h, key, limit, window, limit-1-i)
		if i < limit-1 {
			is.Equal(res.Reset, time.Duration(0)) // Reset is 0 while requests remain
			h.Advance(2 * time.Second)
		} else {
			is.Equal(res.Reset, window-8*time.Second) // the oldest leaves at t = 60s
		}
	}
	h.Advance(10 * time.Second) // t = 18s
	mustRefuse(t, h, key, limit, window, 42*time.Second)
}

func testRollingWindow(t *testing.T, newLimiter NewFunc) {
	const limit, window = 10, time.Minute
	h := newLimiter(t, limit, window)
	key := newKey()
	for i := range 5 { // t = 0
		mustAllow(t, h, key, limit, window, 9-i)
	}
	h.Advance(30 * time.Second) // t = 30s
	for i := range 5 {
		mustAllow(t, h, key, limit, window, 4-i)
	}
	h.Advance(29 * time.Second) // t = 59s: all ten are still in the window
	mustRefuse(t, h, key, limit, window, time.Second)
	h.Advance(time.Second) // t = 60s: the five from t = 0 left
	for i := range 5 {
		mustAllow(t, h, key, limit, window, 4-i)
	}
	mustRefuse(t, h, key, limit, window, 30*time.Second)
	h.Advance(30 * time.Second) // t = 90s: the five from t = 30s left
	for i := range 5 {
		mustAllow(t, h, key, limit, window, 4-i)
	}
	mustRefuse(t, h, key, limit, window, 30*time.Second)
}

func testRollingWindowSpread(t *testing.T, newLimiter NewFunc) {
	const limit, window = 10, time.Minute
	h := newLimiter(t, limit, window)
	key := newKey()
	for i := range limit { // t = 0, 6s, ..., 54s
		mustAllow(t, h, key, limit, window, limit-1-i)
		if i < limit-1 {
			h.Advance(6 * time.Second)
		}
	}
	h.Advance(5 * time.Second) // t = 59s
	mustRefuse(t, h, key, limit, window, time.Second)
	for range 10 { // from here on, exactly one request every 6s gets in
		h.Advance(time.Second) // t = 60s, 66s, ...
		mustAllow(t, h, key, limit, window, 0)
		mustRefuse(t, h, key, limit, window, 6*time.Second)
		h.Advance(5 * time.Second)
		mustRefuse(t, h, key, limit, window, time.Second)
	}
}

func testNoBurstAtWindowBoundary(t *testing.T, newLimiter NewFunc) {
	const limit, window = 10, time.Minute
	h := newLimiter(t, limit, window)
	key := newKey()
	h.Advance(59 * time.Second)
	useUp(t, h, key, limit, window) // all at t = 59s
	// A fixed window starting on the minute would reset at t = 60s.
	h.Advance(2 * time.Second) // t = 61s
	mustRefuse(t, h, key, limit, window, 58*time.Second)
}

func testKeysAreIndependent(t *testing.T, newLimiter NewFunc) {
	const limit, window = 3, time.Minute
	h := newLimiter(t, limit, window)
	a, b := newKey(), newKey()
	useUp(t, h, a, limit, window)
	mustRefuse(t, h, a, limit, window, window)
	h.Advance(10 * time.Second)
	useUp(t, h, b, limit, window)
	mustRefuse(t, h, b, limit, window, window)
	mustRefuse(t, h, a, limit, window, 50*time.Second)
}

func testRefusedRequestsDoNotCount(t *testing.T, newLimiter NewFunc) {
	const limit, window = 4, time.Minute
	h := newLimiter(t, limit, window)
	key := newKey()
	useUp(t, h, key, limit, window)
	for i := range 59 { // hammer it once a second; every try is refused
		h.Advance(time.Second)
		mustRefuse(t, h, key, limit, window, window-time.Duration(i+1)*time.Second)
	}
	h.Advance(time.Second) // t = 60s: the full limit is back
	useUp(t, h, key, limit, window)
	mustRefuse(t, h, key, limit, window, window)
}

func testIdleKeyStartsAfresh(t *testing.T, newLimiter NewFunc) {
	const limit, window = 3, time.Minute
	h := newLimiter(t, limit, window)
	key := newKey()
	mustAllow(t, h, key, limit, window, 2)
	h.Advance(window)
	mustAllow(t, h, key, limit, window, 2)
	h.Advance(10 * window)
	useUp(t, h, key, limit, window)
	mustRefuse(t, h, key, limit, window, window)
}

func testLimitOne(t *testing.T, newLimiter NewFunc) {
	is := is.New(t)
	const limit, window = 1, time.Minute
	h := newLimiter(t, limit, window)
	key := newKey()
	res := mustAllow(t, h, key, limit, window, 0)
	is.Equal(res.Reset, window) // the only slot frees a window later
	mustRefuse(t, h, key, limit, window, window)
	h.Advance(window - time.Millisecond)
	mustRefuse(t, h, key, limit, window, time.Millisecond)
	h.Advance(time.Millisecond)
	mustAllow(t, h, key, limit, window, 0)
	mustRefuse(t, h, key, limit, window, window)
}

func testLargeLimit(t *testing.T, newLimiter NewFunc) {
	const limit, window = 1000, time.Hour
	h := newLimiter(t, limit, window)
	key := newKey()
	for i := range limit { // one request a millisecond
		mustAllow(t, h, key, limit, window, limit-1-i)
		h.Advance(time.Millisecond)
	}
	// t = 1000ms; the oldest, from t = 0, leaves at t = 1h.
	mustRefuse(t, h, key, limit, window, window-limit*time.Millisecond)
	h.Advance(window - limit*time.Millisecond)
	mustAllow(t, h, key, limit, window, 0)
	mustRefuse(t, h, key, limit, window, time.Millisecond)
	h.Advance(10 * time.Millisecond) // ten more have left
	for i := range 10 {
		mustAllow(t, h, key, limit, window, 9-i)
	}
}

func testShortWindow(t *testing.T, newLimiter NewFunc) {
	const limit, window = 3, 10 * time.Millisecond
	h := newLimiter(t, limit, window)
	key := newKey()
	for range 5 {
		for i := range limit {
			mustAllow(t, h, key, limit, window, limit-1-i)
			h.Advance(time.Millisecond)
		}
		mustRefuse(t, h, key, limit, window, window-limit*time.Millisecond)
		h.Advance(window)
	}
}

func testConcurrentOneKey(t *testing.T, newLimiter NewFunc) {
	is := is.New(t)
	const limit, window = 10, time.Minute
	const goroutines, each = 40, 5
	h := newLimiter(t, limit, window)
	key := newKey()
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		remaining = map[int]int{} // Remaining of each allowed request
		refused   int
		errs      []error
	)
	for range goroutines {
		wg.Go(func() {
			for range each {
				res, err := h.Limiter.Allow(context.Background(), key)
				mu.Lock()
				switch {
				case err != nil:
					errs = append(errs, err)
				case res.Allowed:
					remaining[res.Remaining]++
				default:
					refused++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	is.Equal(len(errs), 0)                   // no errors
	is.Equal(refused, goroutines*each-limit) // all but limit refused
	is.Equal(len(remaining), limit)          // limit allowed, each with its own Remaining
	for r, n := range remaining {
		is.True(r >= 0 && r < limit) // Remaining in range
		is.Equal(n, 1)               // no two allowed requests saw the same Remaining
	}
	mustRefuse(t, h, key, limit, window, window)
}

func testConcurrentManyKeys(t *testing.T, newLimiter NewFunc) {
	is := is.New(t)
	const limit, window = 3, time.Minute
	const keys, perKey = 20, 7
	h := newLimiter(t, limit, window)
	names := make([]string, keys)
	for i := range names {
		names[i] = newKey()
	}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		allowed = map[string]int{}
		errs    []error
	)
	for _, key := range names {
		for range perKey {
			wg.Go(func() {
				res, err := h.Limiter.Allow(context.Background(), key)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
				} else if res.Allowed {
					allowed[key]++
				}
			})
		}
	}
	wg.Wait()
	is.Equal(len(errs), 0) // no errors
	for _, key := range names {
		is.Equal(allowed[key], limit) // every key got exactly its limit
	}
}

// Bench calls lim.Allow from GOMAXPROCS goroutines, spread over keys
// keys, for the benchmarks of every limiter.
func Bench(b *testing.B, lim imagegen.Limiter, keys int) {
	names := make([]string, keys)
	for i := range names {
		names[i] = "key-" + strconv.Itoa(i)
	}
	ctx := context.Background()
	var next atomic.Uint64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := next.Add(7919) // spread goroutines over the keys
		for pb.Next() {
			i++
			if _, err := lim.Allow(ctx, names[i%uint64(keys)]); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
