package postgres_test

import (
	"testing"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/testenv/pgtest"
	"github.com/imagegen/imagegen/store/postgres"
	"github.com/imagegen/imagegen/store/storetest"
)

// BenchmarkClaims: one claim with 10,000 pending tasks of one owner or
// of 10,000 owners (IMAGEGEN_TEST_POSTGRES).
func BenchmarkClaims(b *testing.B) {
	pool := pgtest.Connect(b)
	storetest.BenchmarkClaims(b, func(b *testing.B) imagegen.Store {
		return pgtest.NewStore(b, pool, postgres.Config{})
	})
}

// BenchmarkClaimAllOwnersAtCap: a claim that finds every owner at its
// cap (storetest.BenchmarkClaimAllOwnersAtCap).
func BenchmarkClaimAllOwnersAtCap(b *testing.B) {
	pool := pgtest.Connect(b)
	storetest.BenchmarkClaimAllOwnersAtCap(b, func(b *testing.B) imagegen.Store {
		return pgtest.NewStore(b, pool, postgres.Config{})
	})
}
