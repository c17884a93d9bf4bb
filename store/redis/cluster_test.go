package redis_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/matryer/is"
	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv/redistest"
	redisstore "github.com/imagegen/imagegen/store/redis"
	"github.com/imagegen/imagegen/store/storetest"
)

// TestConformanceCluster runs the suite on a Redis Cluster of three
// masters and three replicas that the test starts, each test under its
// own prefix: with the default shards (16, spread over the masters),
// and with one shard (the whole store in one slot, where fair share and
// caps hold across every owner); every acknowledged change waits for the
// replica of its slot's master.
func TestConformanceCluster(t *testing.T) {
	rdb := redistest.StartCluster(t, 3).Client(t)
	for _, shards := range []int{0, 1} {
		t.Run(fmt.Sprintf("shards=%d", shards), func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) storetest.Harness {
				clock := imagegentest.NewClock(time.Time{})
				store := newIsolated(t, rdb, redisstore.Config{Clock: clock, Retention: retention, Shards: shards, WaitReplicas: 1})
				return storetest.Harness{Store: store, Advance: clock.Advance, Retention: retention, Sharded: shards != 1}
			})
		})
	}
	// The other Cluster cases, on the same Cluster (one start for all).
	t.Run("ConcurrentCompletesAcrossShardsWaitForReplicas", func(t *testing.T) { concurrentCompletesWaitForReplicas(t, rdb) })
	t.Run("MigrateToShards", func(t *testing.T) { migrateToShards(t, rdb) })
}

// With WaitReplicas on a sharded Cluster, successes that arrive together
// for tasks of many shards all succeed at once: each shard's go down its
// own master's connection with their WAIT.
func concurrentCompletesWaitForReplicas(t *testing.T, rdb goredis.UniversalClient) {
	is := is.New(t)
	ctx := context.Background()
	s := newIsolated(t, rdb, redisstore.Config{WaitReplicas: 1})
	var claimed []*imagegen.Task
	for i := range 24 {
		owner := fmt.Sprintf("owner-%d", i)
		_, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: owner, Kind: imagegen.LedgerGrant, Amount: 1, Ref: "g"})
		is.NoErr(err)
		_, err = s.CreateTask(ctx, &imagegen.Task{ID: imagegen.NewOwnedID(owner), Owner: owner, Cost: 1, Model: "m",
			Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p"}}, imagegen.CreateParams{})
		is.NoErr(err)
	}
	for len(claimed) < 24 {
		got, err := s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: time.Minute, N: 24})
		is.NoErr(err)
		claimed = append(claimed, got...)
	}
	errs := make(chan error, len(claimed))
	for _, c := range claimed {
		go func() {
			errs <- s.CompleteTask(ctx, c.ID, c.Attempt, []imagegen.Image{{ID: imagegen.NewOwnedID(c.Owner), TaskID: c.ID, Owner: c.Owner, ContentType: "image/png", Size: 1}}, nil)
		}()
	}
	for range claimed {
		is.NoErr(<-errs)
	}
}
