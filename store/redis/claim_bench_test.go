package redis_test

import (
	"testing"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/testenv/redistest"
	redisstore "github.com/imagegen/imagegen/store/redis"
	"github.com/imagegen/imagegen/store/storetest"
)

// BenchmarkClaims: one claim with 10,000 pending tasks of one owner or
// of 10,000 owners, on a real Redis (IMAGEGEN_TEST_REDIS).
func BenchmarkClaims(b *testing.B) {
	rdb := redistest.Connect(b)
	storetest.BenchmarkClaims(b, func(b *testing.B) imagegen.Store {
		return newIsolated(b, rdb, redisstore.Config{})
	})
}

// BenchmarkClaimAllOwnersAtCap: a claim that finds every owner at its
// cap (storetest.BenchmarkClaimAllOwnersAtCap).
func BenchmarkClaimAllOwnersAtCap(b *testing.B) {
	rdb := redistest.Connect(b)
	storetest.BenchmarkClaimAllOwnersAtCap(b, func(b *testing.B) imagegen.Store {
		return newIsolated(b, rdb, redisstore.Config{})
	})
}
