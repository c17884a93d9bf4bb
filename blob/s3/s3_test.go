package s3_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/blob/blobtest"
	blobs3 "github.com/imagegen/imagegen/blob/s3"
	"github.com/imagegen/imagegen/internal/testenv/s3test"
)

// newStore returns a store on endpoint under a prefix of the test's own.
func newStore(t *testing.T, endpoint string) *blobs3.Store {
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true") // never ask a metadata service
	s, err := blobs3.New(context.Background(), blobs3.Config{
		Bucket: s3test.Bucket, Prefix: "t-" + uuid.NewString() + "/", Region: s3test.Region,
		Endpoint: endpoint, PathStyle: true, ChecksumWhenRequired: true, Credentials: s3test.Credentials,
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformanceGofakes3(t *testing.T) {
	blobtest.Run(t, func(t *testing.T) imagegen.BlobStore { return newStore(t, s3test.Fake(t)) })
}

func TestConformanceS3(t *testing.T) {
	endpoint := s3test.Real(t)
	blobtest.Run(t, func(t *testing.T) imagegen.BlobStore { return newStore(t, endpoint) })
}

func TestPingFindsTheBucket(t *testing.T) {
	endpoint := s3test.Fake(t)
	if err := newStore(t, endpoint).Ping(context.Background()); err != nil {
		t.Fatalf("ping: %v", err)
	}
}

// A missing bucket is one line that names the bucket and the endpoint and
// says how to create it, not the SDK's HeadBucket dump.
func TestPingMissingBucketSaysHowToCreateIt(t *testing.T) {
	is := is.New(t)
	endpoint := s3test.Fake(t)
	err := storeOf(t, blobs3.Config{Bucket: "no-such-bucket", Endpoint: endpoint}).Ping(context.Background())
	is.True(errors.Is(err, blobs3.ErrBucketNotFound))
	msg := err.Error()
	is.True(!strings.Contains(msg, "\n"))                                                    // one line
	is.True(!strings.Contains(msg, "StatusCode"))                                            // not the SDK's dump
	is.True(strings.Contains(msg, `bucket "no-such-bucket" does not exist at `+endpoint))    // what and where
	is.True(strings.Contains(msg, "aws s3 mb s3://no-such-bucket --endpoint-url "+endpoint)) // how, by hand
	is.True(strings.Contains(msg, "create_bucket=true"))                                     // or by imagegen
}

// With CreateBucket, EnsureBucket makes a missing bucket, and a second
// store (a second process) finds it made. Ping, the readiness check,
// never makes one: a bucket that disappears is reported, not silently
// replaced by an empty one.
func TestEnsureBucketCreatesItWhenAsked(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	endpoint := s3test.Fake(t)
	cfg := blobs3.Config{Bucket: "made-" + uuid.NewString()[:8], Endpoint: endpoint, CreateBucket: true}
	s := storeOf(t, cfg)
	is.True(errors.Is(s.Ping(ctx), blobs3.ErrBucketNotFound)) // a probe creates nothing
	is.NoErr(s.EnsureBucket(ctx))
	is.NoErr(s.Put(ctx, "k", strings.NewReader("abc"), 3, "image/png"))
	is.NoErr(storeOf(t, cfg).EnsureBucket(ctx))
	cfg.CreateBucket = false
	is.NoErr(storeOf(t, cfg).Ping(ctx)) // it exists now
}

// storeOf returns a store for c on a local fake (path style, the test
// credentials and region).
func storeOf(t *testing.T, c blobs3.Config) *blobs3.Store {
	t.Helper()
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	c.Region, c.PathStyle, c.ChecksumWhenRequired, c.Credentials = s3test.Region, true, true, s3test.Credentials
	s, err := blobs3.New(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestNeedsABucket(t *testing.T) {
	if _, err := blobs3.New(context.Background(), blobs3.Config{}); err == nil {
		t.Fatal("New without Bucket succeeded")
	}
}

// A Prefix that does not end in "/" is refused: the bucket's other
// objects that merely start with it would be listed as blobs (under
// Prefix "images", "images-backup.tar" is the blob "-backup.tar"), and
// Service.SweepBlobs deletes every listed blob without an image record.
// Two such stores would also share objects: Prefix "a" and key "bc" is
// Prefix "ab" and key "c".
func TestPrefixMustEndInSlash(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	endpoint := s3test.Fake(t)
	other := storeOf(t, blobs3.Config{Bucket: s3test.Bucket, Endpoint: endpoint})
	is.NoErr(other.Put(ctx, "images-backup.tar", strings.NewReader("abc"), 3, "application/x-tar"))
	t.Cleanup(func() { _ = other.Delete(context.Background(), "images-backup.tar") })

	c := blobs3.Config{Bucket: s3test.Bucket, Prefix: "images", Region: s3test.Region, Endpoint: endpoint,
		PathStyle: true, ChecksumWhenRequired: true, Credentials: s3test.Credentials}
	s, err := blobs3.New(ctx, c)
	if err == nil {
		var listed []string
		is.NoErr(s.List(ctx, func(b imagegen.BlobInfo) error { listed = append(listed, b.Key); return nil }))
		t.Fatalf("New took Prefix %q; its List sees another object as the blobs %q", c.Prefix, listed)
	}
	is.True(strings.Contains(err.Error(), `must end with "/"`))
	for _, ok := range []string{"", "images/", "a/b/"} {
		c.Prefix = ok
		_, err := blobs3.New(ctx, c)
		is.NoErr(err)
	}
}
