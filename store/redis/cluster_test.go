package redis_test

import (
	"fmt"
	"testing"
	"time"

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
}
