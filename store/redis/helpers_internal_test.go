package redis

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/google/uuid"
	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/testenv/redistest"
)

// fundedStore returns a store on a fresh miniredis, its client, and
// owner "a" granted credits.
func fundedStore(t *testing.T, credits int64) (*Store, *goredis.Client) {
	t.Helper()
	mr := miniredis.RunT(t)
	rdb := goredis.NewClient(&goredis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	return fundedStoreOn(t, rdb, "", credits), rdb
}

// fundedStores runs test on a funded store (as fundedStore) on miniredis
// and, when IMAGEGEN_TEST_REDIS is set, on that server under a prefix of
// its own, deleted afterwards: the scripts' Lua runs in gopher-lua on
// one and in Redis's own Lua on the other.
func fundedStores(t *testing.T, credits int64, test func(t *testing.T, s *Store)) {
	t.Run("miniredis", func(t *testing.T) {
		s, _ := fundedStore(t, credits)
		test(t, s)
	})
	t.Run("redis", func(t *testing.T) {
		rdb := redistest.Connect(t)
		s := fundedStoreOn(t, rdb, "imagegen-test-"+uuid.NewString(), credits)
		t.Cleanup(func() { redistest.DeleteKeysOf(t, rdb, s) })
		test(t, s)
	})
}

// fundedStoreOn returns a store on rdb under prefix ("" for the default),
// with owner "a" granted credits.
func fundedStoreOn(t *testing.T, rdb goredis.UniversalClient, prefix string, credits int64) *Store {
	t.Helper()
	s, err := New(rdb, Config{Retention: time.Hour, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddEntry(context.Background(), imagegen.LedgerEntry{Owner: "a", Kind: imagegen.LedgerGrant, Amount: credits, Ref: "grant:a"}); err != nil {
		t.Fatal(err)
	}
	return s
}

// claimedTasks submits a task of owner "a" (funded) for each id and
// claims it, in turn.
func claimedTasks(t *testing.T, s *Store, ids ...string) []*imagegen.Task {
	t.Helper()
	var claimed []*imagegen.Task
	for _, id := range ids {
		task := &imagegen.Task{ID: id, Owner: "a", Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p"}, Model: "m", Cost: 1}
		if _, err := s.CreateTask(context.Background(), task, imagegen.CreateParams{}); err != nil {
			t.Fatal(err)
		}
		c, err := s.ClaimTask(context.Background(), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		claimed = append(claimed, c)
	}
	return claimed
}

// claimedTask submits task t1 of owner "a" (funded) and claims it.
func claimedTask(t *testing.T, s *Store) *imagegen.Task {
	t.Helper()
	return claimedTasks(t, s, "t1")[0]
}

// spoil makes key a string: a value of another kind for every key the
// store keeps as a hash, list, set or sorted set, as something other
// than the store might write it (SET replaces a key of any kind).
func spoil(t *testing.T, s *Store, key string) {
	t.Helper()
	if err := s.rdb.Set(context.Background(), key, "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
}
