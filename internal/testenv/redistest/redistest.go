// Package redistest helps tests run against the real Redis named by
// IMAGEGEN_TEST_REDIS (a redis:// URL), cleaning up only their own keys.
package redistest

import (
	"context"
	"os"
	"slices"
	"sync"
	"testing"

	goredis "github.com/redis/go-redis/v9"
)

// EnvVar names the Redis the suites also run against when it is set.
const EnvVar = "IMAGEGEN_TEST_REDIS"

// Connect returns a client of the Redis named by IMAGEGEN_TEST_REDIS, or
// skips the test (saying so) when the variable is not set. It fails the
// test when the variable is set but Redis does not answer.
func Connect(t testing.TB) goredis.UniversalClient {
	t.Helper()
	return NewClient(t, Options(t))
}

// Options parses IMAGEGEN_TEST_REDIS, or skips the test (saying so) when
// the variable is not set.
func Options(t testing.TB) *goredis.Options {
	t.Helper()
	url := os.Getenv(EnvVar)
	if url == "" {
		t.Skip(EnvVar + " is not set (e.g. redis://127.0.0.1:6379/15); what needs a real Redis is skipped")
	}
	opt, err := goredis.ParseURL(url)
	if err != nil {
		t.Fatalf("%s: %v", EnvVar, err)
	}
	return opt
}

// NewClient returns a client with opt, closed when the test ends, and
// fails the test when Redis does not answer.
func NewClient(t testing.TB, opt *goredis.Options) *goredis.Client {
	t.Helper()
	rdb := goredis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	if err := rdb.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("%s: Redis at %s does not answer: %v", EnvVar, opt.Addr, err)
	}
	return rdb
}

// Keys lists the keys matching pattern, with SCAN (on every master of a
// Cluster).
func Keys(t testing.TB, rdb goredis.UniversalClient, pattern string) []string {
	t.Helper()
	ctx := context.Background()
	var (
		mu   sync.Mutex
		keys []string
	)
	scan := func(ctx context.Context, c goredis.UniversalClient) error {
		iter := c.Scan(ctx, 0, pattern, 500).Iterator()
		for iter.Next(ctx) {
			mu.Lock()
			keys = append(keys, iter.Val())
			mu.Unlock()
		}
		return iter.Err()
	}
	var err error
	if cc, ok := rdb.(*goredis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, c *goredis.Client) error { return scan(ctx, c) })
	} else {
		err = scan(ctx, rdb)
	}
	if err != nil {
		t.Errorf("scan %s: %v", pattern, err)
	}
	return keys
}

// KeyOwner is a store whose keys a pattern matches along with, maybe,
// some of other stores' (store/redis.Store: see its KeyPattern).
type KeyOwner interface {
	KeyPattern() string
	OwnsKey(key string) bool
}

// DeleteKeysOf deletes s's keys: those its KeyPattern matches that it
// owns, leaving other stores' alone.
func DeleteKeysOf(t testing.TB, rdb goredis.UniversalClient, s KeyOwner) {
	t.Helper()
	deleteKeys(t, rdb, s.KeyPattern(), slices.DeleteFunc(Keys(t, rdb, s.KeyPattern()), func(k string) bool { return !s.OwnsKey(k) }))
}

// DeleteKeys deletes the keys matching pattern, and no other; never
// FLUSHDB: the server may be shared. It unlinks a thousand keys a round
// trip (one key a command, so a cluster takes it too): benchmarks leave
// many.
func DeleteKeys(t testing.TB, rdb goredis.UniversalClient, pattern string) {
	t.Helper()
	deleteKeys(t, rdb, pattern, Keys(t, rdb, pattern))
}

// deleteKeys deletes keys, pattern's matches, in batches.
func deleteKeys(t testing.TB, rdb goredis.UniversalClient, pattern string, keys []string) {
	t.Helper()
	ctx := context.Background()
	for batch := range slices.Chunk(keys, 1000) {
		_, err := rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
			for _, k := range batch {
				p.Unlink(ctx, k)
			}
			return nil
		})
		if err != nil {
			t.Errorf("clean up %s: %v", pattern, err)
			return
		}
	}
}
