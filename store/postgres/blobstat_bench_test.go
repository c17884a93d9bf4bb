package postgres_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"testing"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/testenv/pgtest"
	"github.com/imagegen/imagegen/store/postgres"
)

// BenchmarkBlobInfo: Stat (which every Open makes first) and a List of
// 20 blobs of 4 MB each in the blobs table, random bytes as a PNG's
// are: what learning a blob's size and validator costs
// (IMAGEGEN_TEST_POSTGRES). These read no blob's bytes; an ETag of
// md5(data) read them all.
func BenchmarkBlobInfo(b *testing.B) {
	ctx := context.Background()
	pool := pgtest.Connect(b)
	blobs := pgtest.NewStore(b, pool, postgres.Config{}).Blobs()
	data := make([]byte, 4<<20)
	rand.Read(data)
	const n = 20
	for i := range n {
		if err := blobs.Put(ctx, fmt.Sprintf("blob-%02d", i), bytes.NewReader(data), int64(len(data)), "image/png"); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("stat", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, err := blobs.Stat(ctx, fmt.Sprintf("blob-%02d", i%n)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("list", func(b *testing.B) {
		for b.Loop() {
			seen := 0
			err := blobs.List(ctx, func(imagegen.BlobInfo) error { seen++; return nil })
			if err != nil || seen != n {
				b.Fatalf("listed %d blobs of %d: %v", seen, n, err)
			}
		}
	})
}
