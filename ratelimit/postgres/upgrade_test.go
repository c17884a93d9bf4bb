package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/matryer/is"

	"github.com/imagegen/imagegen/internal/testenv/pgtest"
	"github.com/imagegen/imagegen/ratelimit/postgres"
	storepg "github.com/imagegen/imagegen/store/postgres"
)

// A process of the version before schema 18 checks with rate_allow, one
// call a check. After migration 18 that function is one call of
// rate_allow_many, so during a rolling upgrade both versions' checks
// count in the same rows; after a migration back to 17, rate_allow
// counts on those rows alone.
func TestEarlierVersionsChecksShareTheCount(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	pool := pgtest.Connect(t)
	schema := pgtest.MigratedSchema(t, pool)
	const limit = 3
	lim := newPostgres(t, pool, postgres.Config{Limit: limit, Window: time.Minute, Schema: schema, Prefix: "p:"})
	// earlier checks key as a process of schema 17 does: rate_allow,
	// on the server's clock.
	earlier := func(key string) bool {
		t.Helper()
		var allowed bool
		err := pool.QueryRow(ctx, `SELECT allowed FROM `+pgx.Identifier{schema}.Sanitize()+`.rate_allow($1, NULL, $2, $3)`,
			"p:"+key, time.Minute.Microseconds(), limit).Scan(&allowed)
		is.NoErr(err)
		return allowed
	}
	allow := func(key string) bool {
		t.Helper()
		r, err := lim.Allow(ctx, key)
		is.NoErr(err)
		return r.Allowed
	}

	is.True(earlier("k")) // 1 of 3
	is.True(allow("k"))   // 2
	is.True(allow("k"))   // 3
	is.True(!allow("k"))  // the earlier check counted
	is.True(!earlier("k"))

	is.NoErr(storepg.MigrateTo(ctx, pool, schema, 17))
	is.True(!earlier("k")) // the same row, still full
	for range limit {
		is.True(earlier("other"))
	}
	is.True(!earlier("other"))

	is.NoErr(storepg.MigrateTo(ctx, pool, schema, storepg.LatestVersion()))
	is.True(!allow("other")) // counted by version 17's function
}
