package imagegen_test

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/imagegen/imagegen"
	blobmemory "github.com/imagegen/imagegen/blob/memory"
)

// Reading one range of a blob: every BlobStore of this module fetches
// exactly those bytes, in one call (one GET with a Range on S3, GETRANGE
// on Redis, substring() in PostgreSQL).
func ExampleReadBlobRange() {
	ctx := context.Background()
	blobs := blobmemory.New(blobmemory.Config{})
	data := "0123456789abcdef"
	if err := blobs.Put(ctx, "img-1", strings.NewReader(data), int64(len(data)), "image/png"); err != nil {
		fmt.Println(err)
		return
	}
	rd, err := imagegen.ReadBlobRange(ctx, blobs, "img-1", 10, 4)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rd.Close()
	got, err := io.ReadAll(rd)
	fmt.Printf("%s %v\n", got, err)

	// A range past the end is refused before any byte is read.
	_, err = imagegen.ReadBlobRange(ctx, blobs, "img-1", 14, 4)
	fmt.Println(err)
	// Output:
	// abcd <nil>
	// imagegen: blob size mismatch: blob img-1: range 14-17 is past its end (16 bytes)
}
