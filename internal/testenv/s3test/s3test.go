// Package s3test gives tests an S3-compatible endpoint: an in-process
// gofakes3 server by default, or the service IMAGEGEN_TEST_S3 names
// (such as moto_server), each with the test bucket made.
package s3test

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
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// EnvVar names an S3-compatible endpoint the suites also run against.
const EnvVar = "IMAGEGEN_TEST_S3"

// Bucket is the bucket tests use; each test keeps to a prefix of its own.
const Bucket = "imagegen-test"

// Region is the region tests use.
const Region = "us-east-1"

// Credentials are the static keys fake and local services accept.
var Credentials = credentials.NewStaticCredentialsProvider("test", "test", "")

// Fake starts an in-process S3 (gofakes3) with Bucket and returns its
// endpoint; it stops when the test ends.
func Fake(t testing.TB) string {
	t.Helper()
	backend := s3mem.New()
	if err := backend.CreateBucket(Bucket); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(srv.Close)
	return srv.URL
}

// Real returns IMAGEGEN_TEST_S3's endpoint with Bucket made, or skips
// the test, naming the variable.
func Real(t testing.TB) string {
	t.Helper()
	endpoint := os.Getenv(EnvVar)
	if endpoint == "" {
		t.Skip(EnvVar + " is not set (e.g. http://127.0.0.1:5000 for moto_server); this ran on gofakes3 only")
	}
	client := awss3.New(awss3.Options{
		Region: Region, Credentials: Credentials, BaseEndpoint: aws.String(endpoint), UsePathStyle: true,
	})
	_, err := client.CreateBucket(context.Background(), &awss3.CreateBucketInput{Bucket: aws.String(Bucket)})
	var owned *types.BucketAlreadyOwnedByYou
	var exists *types.BucketAlreadyExists
	if err != nil && !errors.As(err, &owned) && !errors.As(err, &exists) {
		t.Fatalf("%s=%s: create bucket: %v", EnvVar, endpoint, err)
	}
	return endpoint
}
