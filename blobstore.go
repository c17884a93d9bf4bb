package imagegen

import (
	"context"
	"fmt"
	"io"
	"time"
)

// BlobStore keeps the bytes of images; the [Store] keeps their records
// (task, owner, content type, size, checksum, expiry). Keeping them apart
// lets images live where bytes belong (a directory, S3-compatible object
// storage) whatever the Store.
//
// Implementations in this module: blob/memory (the memory store's
// default), blob/redis (the Redis store's default), blob/file (a
// directory) and blob/s3 (any S3-compatible service). Every one passes
// the conformance suite in blob/blobtest.
//
// Keys are image ids: 1 to 200 characters of letters, digits, '-', '_'
// and '.', not starting with '.' ([CheckBlobKey]), so that a key is a
// safe file name and object name everywhere.
//
// Ordering: the bytes are written first, then the record
// ([TaskStore.CompleteTask]). A crash in between leaves at most a blob
// without a record, never a record without bytes; [Service.SweepBlobs]
// deletes such orphans, and the blobs of records that retention removed.
type BlobStore interface {
	// Put stores size bytes read from r under key, replacing any blob
	// there. A reader that ends early or says more than size is an
	// error, and then nothing new is visible under key.
	Put(ctx context.Context, key string, r io.Reader, size int64, contentType string) error
	// Open returns the blob for reading, or ErrBlobNotFound. The caller
	// must close its Body. Seeking is cheap: remote stores fetch only
	// the bytes that are read, from where the body was sought to. The
	// API reads ranges with ReadBlobRange (BlobRangeReader), which
	// fetches exactly the bytes of a range in one call.
	Open(ctx context.Context, key string) (*Blob, error)
	// Stat returns what is known of the blob without reading it, or
	// ErrBlobNotFound.
	Stat(ctx context.Context, key string) (BlobInfo, error)
	// Delete removes the blob; a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// List calls fn for every blob of the store, in no particular order,
	// until fn returns an error (which List returns). fn is called from
	// one goroutine at a time (a store that lists shards at once calls it
	// in turn). Blobs written or deleted while List runs may or may not
	// be seen.
	List(ctx context.Context, fn func(BlobInfo) error) error
}

// BlobInfo describes a stored blob.
type BlobInfo struct {
	Key     string
	Size    int64
	ModTime time.Time // when it was written (the store's clock)
	ETag    string    // the store's validator (quoted), "" if it has none
}

// Blob is an open blob. Body reads the bytes; close it when done.
type Blob struct {
	BlobInfo
	Body io.ReadSeekCloser
}

// BlobPresigner is a BlobStore that can hand out a short-lived URL from
// which anyone holding it may GET the blob without passing through this
// process (blob/s3 is one). httpapi redirects image downloads to such
// URLs when configured to.
type BlobPresigner interface {
	// PresignGet returns a URL that serves key's bytes for ttl.
	PresignGet(ctx context.Context, key string, ttl time.Duration) (string, error)
}

// MaxBlobKeyLen is the longest blob key.
const MaxBlobKeyLen = 200

// CheckBlobKey returns an error wrapping ErrInvalidBlobKey unless key is
// a valid blob key (see [BlobStore]). Every implementation calls it.
func CheckBlobKey(key string) error {
	if key == "" || len(key) > MaxBlobKeyLen || key[0] == '.' {
		return fmt.Errorf("%w: %q", ErrInvalidBlobKey, key)
	}
	for _, c := range []byte(key) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
		if !ok {
			return fmt.Errorf("%w: %q", ErrInvalidBlobKey, key)
		}
	}
	return nil
}
