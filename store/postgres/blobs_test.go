package postgres_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen/internal/pgtest"
	"github.com/imagegen/imagegen/store/postgres"
)

// Puts that arrive together share one statement; two of them for the
// same key cannot (PostgreSQL refuses to upsert a row twice in one
// statement), so that batch runs again a Put at a time: every Put
// succeeds and the key holds one of the payloads whole.
func TestConcurrentPutsOfOneKeyAllSucceed(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	blobs := newStore(t, pgtest.Connect(t), postgres.Config{}).Blobs()
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
	b, err := blobs.Open(ctx, "same-key")
	is.NoErr(err)
	defer b.Body.Close()
	got, err := io.ReadAll(b.Body)
	is.NoErr(err)
	is.True(payloads[string(got)]) // one Put's bytes, whole
}
