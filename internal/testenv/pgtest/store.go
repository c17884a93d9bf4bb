package pgtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/imagegen/imagegen/store/postgres"
)

// MigratedSchema returns a new schema (see Schema) with the store's
// migrations applied, dropped when the test ends.
func MigratedSchema(t testing.TB, pool *pgxpool.Pool) string {
	t.Helper()
	schema := Schema(t, pool)
	if err := postgres.Migrate(context.Background(), pool, schema); err != nil {
		t.Fatalf("migrate %s: %v", schema, err)
	}
	return schema
}

// NewStore returns a store with cfg on a fresh, migrated schema of its
// own (cfg.Schema is replaced), closed and dropped when the test ends.
func NewStore(t testing.TB, pool *pgxpool.Pool, cfg postgres.Config) *postgres.Store {
	t.Helper()
	cfg.Schema = MigratedSchema(t, pool)
	s, err := postgres.New(pool, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}
