package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/blob/blobtest"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/pgtest"
	"github.com/imagegen/imagegen/store/postgres"
	"github.com/imagegen/imagegen/store/storetest"
)

const retention = time.Hour

// newStore returns a store on a fresh, migrated schema of its own,
// dropped when the test ends.
func newStore(t *testing.T, pool *pgxpool.Pool, c postgres.Config) *postgres.Store {
	t.Helper()
	c.Schema = pgtest.Schema(t, pool)
	if err := postgres.Migrate(context.Background(), pool, c.Schema); err != nil {
		t.Fatal(err)
	}
	s, err := postgres.New(pool, c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// TestConformance runs the store suite on the PostgreSQL named by
// IMAGEGEN_TEST_POSTGRES, each test in its own schema, with an injected
// clock (a real server's time cannot be moved).
func TestConformance(t *testing.T) {
	pool := pgtest.Connect(t)
	storetest.Run(t, func(t *testing.T) storetest.Harness {
		clock := imagegentest.NewClock(time.Time{})
		s := newStore(t, pool, postgres.Config{Clock: clock, Retention: retention})
		return storetest.Harness{Store: s, Advance: clock.Advance, Retention: retention}
	})
}

// TestBlobConformance runs the blob store suite on the store's default
// BlobStore, the blobs table of its schema.
func TestBlobConformance(t *testing.T) {
	pool := pgtest.Connect(t)
	blobtest.Run(t, func(t *testing.T) imagegen.BlobStore {
		return newStore(t, pool, postgres.Config{}).Blobs()
	})
}
