package s3_test

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/blob/blobtest"
	blobs3 "github.com/imagegen/imagegen/blob/s3"
	"github.com/imagegen/imagegen/internal/s3test"
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
	other, err := blobs3.New(context.Background(), blobs3.Config{
		Bucket: "no-such-bucket", Region: s3test.Region, Endpoint: endpoint, PathStyle: true, Credentials: s3test.Credentials,
	})
	if err != nil {
		t.Fatal(err)
	}
	if other.Ping(context.Background()) == nil {
		t.Fatal("ping of a missing bucket succeeded")
	}
}

func TestNeedsABucket(t *testing.T) {
	if _, err := blobs3.New(context.Background(), blobs3.Config{}); err == nil {
		t.Fatal("New without Bucket succeeded")
	}
}
