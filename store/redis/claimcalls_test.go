package redis_test

import (
	"context"
	"maps"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/testenv/redistest"
	redisstore "github.com/imagegen/imagegen/store/redis"
)

// A claim of one task from one model's queue, in a store without caps,
// retries waiting or a legacy queue, makes only the calls it needs: its
// script's cost is mostly the cost of each redis.call, not of the
// commands. One EXISTS finds the legacy queue and the delayed retries'
// record gone (no ZCARD, no ZRANGEBYSCORE), and one MSET writes vtag and
// vtime (no SET). Counted in INFO commandstats of a server of the test's
// own.
func TestClaimOfOneTaskMakesItsCallsOnly(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.StartServer(t, 0).Client(t)
	s, err := redisstore.New(rdb, redisstore.Config{Prefix: "imagegen-test-" + uuid.NewString(), Retention: retention})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "u", Kind: imagegen.LedgerGrant, Amount: 10, Ref: "g"}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		task := &imagegen.Task{ID: "t" + strconv.Itoa(i), Owner: "u", Model: "m", Cost: 1,
			Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p"}}
		if _, err := s.CreateTask(ctx, task, imagegen.CreateParams{}); err != nil {
			t.Fatal(err)
		}
	}
	// The first claim starts vtag from vtime (one GET more); the one
	// counted is the next, as a running store's claims are.
	if _, err := s.ClaimTask(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	got, err := s.ClaimTask(ctx, time.Minute)
	if err != nil || got.ID != "t1" {
		t.Fatalf("claimed %v, %v; want t1", got, err)
	}
	calls := redistest.ScriptCalls(t, rdb)
	want := map[string]int{
		"time": 1, "exists": 1, "hgetall": 1, "smembers": 1, "hmget": 2, "zrange": 1,
		"zadd": 1, "hset": 1, "zscore": 1, "zrem": 2, "hincrby": 1, "get": 1, "mset": 1,
	}
	if !maps.Equal(calls, want) {
		t.Fatalf("the claim's calls %v; want %v", calls, want)
	}
}
