package s3_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/google/uuid"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/blob/blobtest"
	blobs3 "github.com/imagegen/imagegen/blob/s3"
)

// envVar names an S3-compatible endpoint (such as moto_server) that the
// suite runs against besides the in-process gofakes3.
const envVar = "IMAGEGEN_TEST_S3"

const bucket = "imagegen-test"

var testCreds = credentials.NewStaticCredentialsProvider("test", "test", "")

// fakeS3 starts an in-process S3 (gofakes3) with the test bucket.
func fakeS3(t *testing.T) string {
	backend := s3mem.New()
	if err := backend.CreateBucket(bucket); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(srv.Close)
	return srv.URL
}

// realS3 returns IMAGEGEN_TEST_S3's endpoint with the test bucket made
// (or skips the test, naming the variable).
func realS3(t *testing.T) string {
	endpoint := os.Getenv(envVar)
	if endpoint == "" {
		t.Skip(envVar + " is not set (e.g. http://127.0.0.1:5000 for moto_server); the suite ran on gofakes3 only")
	}
	client := awss3.New(awss3.Options{
		Region: "us-east-1", Credentials: testCreds, BaseEndpoint: aws.String(endpoint), UsePathStyle: true,
	})
	_, err := client.CreateBucket(context.Background(), &awss3.CreateBucketInput{Bucket: aws.String(bucket)})
	var owned *types.BucketAlreadyOwnedByYou
	if err != nil && !errors.As(err, &owned) {
		t.Fatalf("%s=%s: create bucket: %v", envVar, endpoint, err)
	}
	return endpoint
}

// newStore returns a store on endpoint under a prefix of the test's own.
func newStore(t *testing.T, endpoint string) *blobs3.Store {
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true") // never ask a metadata service
	s, err := blobs3.New(context.Background(), blobs3.Config{
		Bucket: bucket, Prefix: "t-" + uuid.NewString() + "/", Region: "us-east-1",
		Endpoint: endpoint, PathStyle: true, ChecksumWhenRequired: true, Credentials: testCreds,
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformanceGofakes3(t *testing.T) {
	blobtest.Run(t, func(t *testing.T) imagegen.BlobStore { return newStore(t, fakeS3(t)) })
}

func TestConformanceS3(t *testing.T) {
	endpoint := realS3(t)
	blobtest.Run(t, func(t *testing.T) imagegen.BlobStore { return newStore(t, endpoint) })
}

func TestPingFindsTheBucket(t *testing.T) {
	endpoint := fakeS3(t)
	if err := newStore(t, endpoint).Ping(context.Background()); err != nil {
		t.Fatalf("ping: %v", err)
	}
	other, err := blobs3.New(context.Background(), blobs3.Config{
		Bucket: "no-such-bucket", Region: "us-east-1", Endpoint: endpoint, PathStyle: true, Credentials: testCreds,
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
