package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/testenv/pgtest"
	"github.com/imagegen/imagegen/store/postgres"
)

func TestMigrateUpAndDown(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	pool := pgtest.Connect(t)
	schema := pgtest.Schema(t, pool)
	countTables := func() int {
		var n int
		is.NoErr(pool.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = $1`, schema).Scan(&n))
		return n
	}

	// New touches nothing; an unmigrated schema is reported, not built.
	s, err := postgres.New(pool, postgres.Config{Schema: schema})
	is.NoErr(err)
	defer s.Close()
	is.True(errors.Is(s.CheckSchema(ctx), postgres.ErrSchemaVersion))
	is.Equal(countTables(), 0)

	is.NoErr(postgres.Migrate(ctx, pool, schema))
	v, err := postgres.SchemaVersion(ctx, pool, schema)
	is.NoErr(err)
	is.Equal(v, postgres.LatestVersion())
	is.NoErr(s.CheckSchema(ctx))
	is.True(countTables() > 5)
	is.NoErr(postgres.Migrate(ctx, pool, schema)) // again: nothing to do

	_, err = s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "u", Kind: imagegen.LedgerGrant, Amount: 1, Ref: "g"})
	is.NoErr(err)

	// Down removes every table and function the migrations made, and
	// leaves the schema (it may hold the app's tables).
	is.NoErr(postgres.MigrateDown(ctx, pool, schema))
	is.Equal(countTables(), 0)
	var funcs int
	is.NoErr(pool.QueryRow(ctx, `SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1`, schema).Scan(&funcs))
	is.Equal(funcs, 0)
	var schemas int
	is.NoErr(pool.QueryRow(ctx, `SELECT count(*) FROM pg_namespace WHERE nspname = $1`, schema).Scan(&schemas))
	is.Equal(schemas, 1)
	v, err = postgres.SchemaVersion(ctx, pool, schema)
	is.NoErr(err)
	is.Equal(v, 0)

	// And up again from nothing, step by step.
	for v := 1; v <= postgres.LatestVersion(); v++ {
		is.NoErr(postgres.MigrateTo(ctx, pool, schema, v))
		got, err := postgres.SchemaVersion(ctx, pool, schema)
		is.NoErr(err)
		is.Equal(got, v)
	}
	b, err := s.Balance(ctx, "u")
	is.NoErr(err)
	is.Equal(b, int64(0)) // down dropped the data with the tables
	is.True(postgres.MigrateTo(ctx, pool, schema, postgres.LatestVersion()+1) != nil)
}

// Concurrent migrations of one schema wait for each other instead of
// failing on half-made tables.
func TestConcurrentMigrations(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Connect(t)
	schema := pgtest.Schema(t, pool)
	errs := make(chan error, 4)
	for range 4 {
		go func() { errs <- postgres.Migrate(ctx, pool, schema) }()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	v, err := postgres.SchemaVersion(ctx, pool, schema)
	if err != nil || v != postgres.LatestVersion() {
		t.Fatalf("version %d, %v", v, err)
	}
}
