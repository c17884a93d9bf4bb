package redis_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/google/uuid"
	"github.com/matryer/is"
	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
	blobmemory "github.com/imagegen/imagegen/blob/memory"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/internal/testenv/redistest"
	redisstore "github.com/imagegen/imagegen/store/redis"
	"github.com/imagegen/imagegen/store/storetest"
)

const retention = time.Hour

// TestConformanceMiniredis runs the suite on miniredis with the server's
// clock: Advance moves miniredis's time and its TTLs together.
func TestConformanceMiniredis(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Harness {
		mr := miniredis.RunT(t)
		now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		mr.SetTime(now)
		rdb := goredis.NewClient(&goredis.Options{Addr: mr.Addr()})
		t.Cleanup(func() { _ = rdb.Close() })
		store, err := redisstore.New(rdb, redisstore.Config{Retention: retention})
		if err != nil {
			t.Fatal(err)
		}
		return storetest.Harness{
			Store: store,
			Advance: func(d time.Duration) {
				now = now.Add(d)
				mr.SetTime(now)
				mr.FastForward(d)
			},
			Retention: retention,
		}
	})
}

// TestConformanceRedis runs the suite on the Redis server named by
// IMAGEGEN_TEST_REDIS, each test under its own key prefix, with an
// injected clock (a real server's time cannot be moved).
func TestConformanceRedis(t *testing.T) {
	rdb := realRedis(t)
	storetest.Run(t, func(t *testing.T) storetest.Harness {
		clock := imagegentest.NewClock(time.Time{})
		store := newIsolated(t, rdb, redisstore.Config{Clock: clock, Retention: retention})
		return storetest.Harness{Store: store, Advance: clock.Advance, Retention: retention}
	})
}

// realRedis connects to IMAGEGEN_TEST_REDIS or skips.
func realRedis(t *testing.T) goredis.UniversalClient { return redistest.Connect(t) }

// newIsolated returns a store under a fresh prefix and deletes its keys
// (and only its keys) when the test ends.
func newIsolated(t testing.TB, rdb goredis.UniversalClient, o redisstore.Config) *redisstore.Store {
	t.Helper()
	o.Prefix = "imagegen-test-" + uuid.NewString()
	store, err := redisstore.New(rdb, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { redistest.DeleteKeysOf(t, rdb, store) })
	return store
}

func deleteKeys(t testing.TB, rdb goredis.UniversalClient, pattern string) {
	redistest.DeleteKeys(t, rdb, pattern)
}

// TestConformanceExternalBlobs runs the suite with image bytes in a
// BlobStore of the operator's instead of Redis.
func TestConformanceExternalBlobs(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Harness {
		mr := miniredis.RunT(t)
		clock := imagegentest.NewClock(time.Time{})
		rdb := goredis.NewClient(&goredis.Options{Addr: mr.Addr()})
		t.Cleanup(func() { _ = rdb.Close() })
		store, err := redisstore.New(rdb, redisstore.Config{Retention: retention, Clock: clock, Blobs: blobmemory.New(blobmemory.Config{})})
		if err != nil {
			t.Fatal(err)
		}
		return storetest.Harness{Store: store, Advance: func(d time.Duration) { clock.Advance(d); mr.FastForward(d) }, Retention: retention}
	})
}

// A task finished through one store (process) wakes a watcher in
// another, and the subscription ends soon after the last watcher stops.
func TestWatchAcrossProcesses(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	mr := miniredis.RunT(t)
	open := func() (*redisstore.Store, *goredis.Client) {
		rdb := goredis.NewClient(&goredis.Options{Addr: mr.Addr()})
		t.Cleanup(func() { _ = rdb.Close() })
		s, err := redisstore.New(rdb, redisstore.Config{})
		is.NoErr(err)
		return s, rdb
	}
	a, _ := open()
	b, rdbB := open()
	_, err := a.AddEntry(ctx, imagegen.LedgerEntry{Owner: "u", Kind: imagegen.LedgerGrant, Amount: 1, Ref: "g"})
	is.NoErr(err)
	_, err = a.CreateTask(ctx, &imagegen.Task{ID: "t1", Owner: "u", Cost: 1, Model: "m", Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p"}}, imagegen.CreateParams{})
	is.NoErr(err)

	finished, stop, err := b.WatchTask(ctx, "t1")
	is.NoErr(err)
	subs, err := rdbB.PubSubNumSub(ctx, "{imagegen}:finished").Result()
	is.NoErr(err)
	is.Equal(subs["{imagegen}:finished"], int64(1))

	c, err := a.ClaimTask(ctx, time.Minute)
	is.NoErr(err)
	is.NoErr(a.CompleteTask(ctx, c.ID, c.Attempt, []imagegen.Image{{ID: "i1", ContentType: "image/png", Size: 1}}, nil))
	select {
	case <-finished:
	case <-time.After(5 * time.Second):
		t.Fatal("the watcher in the other process was not woken")
	}
	stop()
	// No subscription is kept once nobody waits (it lingers 2 s).
	testenv.EventuallyNoError(t, 10*time.Second, "the subscription to end with its last watcher", func() error {
		subs, err := rdbB.PubSubNumSub(ctx, "{imagegen}:finished").Result()
		if err != nil {
			return err
		}
		if n := subs["{imagegen}:finished"]; n != 0 {
			return fmt.Errorf("%d subscribers", n)
		}
		return nil
	})
}

// errOf is the error of a FailTask or CancelTask, whose refund the
// check at hand does not look at.
func errOf(_ int64, err error) error { return err }

// TestNewRefusesRetentionBelowAMillisecond: Redis's TTLs are whole
// milliseconds, so a shorter retention (PX 0: refused by SET, "delete
// now" to PEXPIRE) is refused when the store is made.
func TestNewRefusesRetentionBelowAMillisecond(t *testing.T) {
	rdb := goredis.NewClient(&goredis.Options{Addr: miniredis.RunT(t).Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	for _, r := range []time.Duration{-time.Second, time.Microsecond, time.Millisecond - 1} {
		if _, err := redisstore.New(rdb, redisstore.Config{Retention: r}); err == nil {
			t.Errorf("Retention %v: no error", r)
		}
	}
	for _, r := range []time.Duration{0, time.Millisecond} {
		if _, err := redisstore.New(rdb, redisstore.Config{Retention: r}); err != nil {
			t.Errorf("Retention %v: %v", r, err)
		}
	}
}

// KeyPattern matches the store's keys and no other store's, whatever
// glob characters its prefix holds: the pattern of prefix "P-a*" once
// matched the keys of prefix "P-ab" too, and a cleanup through it (the
// tests', an operator's tool) deleted another store's data.
func TestKeyPatternEscapesThePrefix(t *testing.T) {
	rdb := realRedis(t)
	ctx := context.Background()
	base := "imagegen-test-" + uuid.NewString()
	for _, shards := range []int{0, 2} {
		for _, glob := range []string{"*", "?", "[ab]", `\`} {
			mine, err := redisstore.New(rdb, redisstore.Config{Prefix: base + "-a" + glob, Shards: shards})
			if err != nil {
				t.Fatal(err)
			}
			other, err := redisstore.New(rdb, redisstore.Config{Prefix: base + "-ab", Shards: shards})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { deleteKeys(t, rdb, "{"+base+"*") })
			if _, err := other.AddEntry(ctx, imagegen.LedgerEntry{Owner: "bob", Kind: imagegen.LedgerGrant, Amount: 5, Ref: "grant:g"}); err != nil {
				t.Fatal(err)
			}
			if keys := redistest.Keys(t, rdb, mine.KeyPattern()); len(keys) != 0 {
				t.Errorf("shards %d: prefix %q: KeyPattern %q matches another store's keys %q", shards, "-a"+glob, mine.KeyPattern(), keys)
			}
			if keys := redistest.Keys(t, rdb, other.KeyPattern()); len(keys) == 0 {
				t.Errorf("shards %d: KeyPattern %q matches none of the store's own keys", shards, other.KeyPattern())
			}
			deleteKeys(t, rdb, "{"+base+"*")
		}
	}
}
