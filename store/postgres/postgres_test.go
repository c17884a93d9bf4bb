package postgres_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/blob/blobtest"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv/pgtest"
	"github.com/imagegen/imagegen/store/postgres"
	"github.com/imagegen/imagegen/store/storetest"
)

const retention = time.Hour

// TestConformance runs the store suite on the PostgreSQL named by
// IMAGEGEN_TEST_POSTGRES, each test in its own schema, with an injected
// clock (a real server's time cannot be moved).
func TestConformance(t *testing.T) {
	pool := pgtest.Connect(t)
	storetest.Run(t, func(t *testing.T) storetest.Harness {
		clock := imagegentest.NewClock(time.Time{})
		s := pgtest.NewStore(t, pool, postgres.Config{Clock: clock, Retention: retention})
		return storetest.Harness{Store: s, Advance: clock.Advance, Retention: retention, KeepsChargedIDs: true}
	})
}

// TestBlobConformance runs the blob store suite on the store's default
// BlobStore, the blobs table of its schema.
func TestBlobConformance(t *testing.T) {
	pool := pgtest.Connect(t)
	blobtest.Run(t, func(t *testing.T) imagegen.BlobStore {
		return pgtest.NewStore(t, pool, postgres.Config{}).Blobs()
	})
}

// Puts that arrive together share one statement; two of them for the
// same key cannot (PostgreSQL refuses to upsert a row twice in one
// statement), so that batch runs again a Put at a time: every Put
// succeeds and the key holds one of the payloads whole.
func TestConcurrentPutsOfOneKeyAllSucceed(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	blobs := pgtest.NewStore(t, pgtest.Connect(t), postgres.Config{}).Blobs()
	payloads := make(map[string]bool)
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := range 32 {
		data := fmt.Sprintf("payload %02d %s", i, bytes.Repeat([]byte{'x'}, 1000))
		payloads[data] = true
		key := "same-key"
		if i%2 == 1 {
			key = fmt.Sprintf("own-key-%02d", i)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- blobs.Put(ctx, key, bytes.NewReader([]byte(data)), int64(len(data)), "image/png")
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		is.NoErr(err)
	}
	_, got := blobtest.ReadAll(t, blobs, "same-key")
	is.True(payloads[string(got)]) // one Put's bytes, whole
}
