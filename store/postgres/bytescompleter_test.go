package postgres_test

import (
	"context"
	"testing"

	"github.com/imagegen/imagegen/internal/testenv/pgtest"
	"github.com/imagegen/imagegen/store/postgres"
)

// A store whose Blobs() is Config.Blobs declines CompleteTaskWithBytes
// (storetest's CompleteWithBytes covers the store's own blobs).
func TestCompleteTaskWithBytesDeclinesOtherBlobs(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Connect(t)
	s := pgtest.NewStore(t, pool, postgres.Config{})
	other := pgtest.NewStore(t, pool, postgres.Config{Blobs: s.Blobs()})
	if done, err := other.CompleteTaskWithBytes(ctx, "t1", 1, nil, nil, nil); done || err != nil {
		t.Fatalf("with Config.Blobs: %v, %v; want not done", done, err)
	}
}
