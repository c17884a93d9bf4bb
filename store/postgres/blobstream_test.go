package postgres_test

import (
	"bytes"
	"context"
	"io"
	"runtime"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/testenv/pgtest"
	"github.com/imagegen/imagegen/store/postgres"
)

// The blobs table is read a chunk at a time: opening an 8 MiB image and
// reading its first bytes, or a range of it, allocates a small part of
// it (issue 22: Open read the whole bytea into memory per download, so
// 50 downloads of a 10 MB image held 500 MB).
func TestBlobReadsDoNotHoldTheWholeBlob(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	blobs := pgtest.NewStore(t, pgtest.Connect(t), postgres.Config{}).Blobs()
	data := bytes.Repeat([]byte("0123456789abcdef"), 8<<20/16)
	is.NoErr(blobs.Put(ctx, "big", bytes.NewReader(data), int64(len(data)), "image/png"))

	allocated := func(read func()) uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		read()
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	first := make([]byte, 1024)
	opened := allocated(func() {
		b, err := blobs.Open(ctx, "big")
		is.NoErr(err)
		_, err = io.ReadFull(b.Body, first)
		is.NoErr(err)
		is.NoErr(b.Body.Close())
	})
	ranged := allocated(func() {
		rd, err := imagegen.ReadBlobRange(ctx, blobs, "big", 1<<20, 1024)
		is.NoErr(err)
		got, err := io.ReadAll(rd)
		is.NoErr(err)
		is.Equal(got, data[1<<20:1<<20+1024])
		is.NoErr(rd.Close())
	})
	t.Logf("allocated for the first KiB of an 8 MiB blob: Open %d bytes, ReadRange %d bytes", opened, ranged)
	is.True(opened < 2<<20) // a 256 KiB chunk and the driver's buffers, not 8 MiB
	is.True(ranged < 2<<20)
}
