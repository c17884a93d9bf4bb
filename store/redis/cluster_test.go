package redis_test

import (
	"testing"
	"time"

	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv/redistest"
	redisstore "github.com/imagegen/imagegen/store/redis"
	"github.com/imagegen/imagegen/store/storetest"
)

// TestConformanceCluster runs the suite on a Redis Cluster of three
// masters and three replicas that the test starts, each test under its
// own prefix.
func TestConformanceCluster(t *testing.T) {
	rdb := redistest.StartCluster(t, 3).Client(t)
	storetest.Run(t, func(t *testing.T) storetest.Harness {
		clock := imagegentest.NewClock(time.Time{})
		store := newIsolated(t, rdb, redisstore.Config{Clock: clock, Retention: retention})
		return storetest.Harness{Store: store, Advance: clock.Advance, Retention: retention}
	})
}
