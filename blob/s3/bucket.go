package s3

import (
	"context"
	"errors"
	"fmt"
	"strings"

	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// ErrBucketNotFound is the cause of Ping's error when the bucket does not
// exist (and Config.CreateBucket is off).
var ErrBucketNotFound = errors.New("bucket not found")

// Ping checks that the bucket exists and the credentials reach it: the
// readiness check of the image store (server.BlobsCheck). It never
// creates the bucket, whatever Config.CreateBucket says, so a probe
// writes nothing and a bucket that disappears is reported rather than
// replaced by an empty one. A missing bucket is an error wrapping
// ErrBucketNotFound, whose one line names the bucket and the endpoint
// and says how to create it.
func (s *Store) Ping(ctx context.Context) error {
	_, err := s.client.HeadBucket(ctx, &awss3.HeadBucketInput{Bucket: &s.bucket})
	switch {
	case err == nil:
		return nil
	case !isNotFound(err):
		return fmt.Errorf("s3 blobs: bucket %s at %s: %w", s.bucket, s.where(), err)
	}
	return &bucketNotFoundError{msg: fmt.Sprintf(
		"s3 blobs: bucket %q does not exist at %s: create it (%s), or let imagegen create it with create_bucket=true in the blobs URL (s3.Config.CreateBucket)",
		s.bucket, s.where(), s.makeBucketCommand()), cause: err}
}

// EnsureBucket is Ping at startup (blob.Open calls it): a missing
// bucket is created when Config.CreateBucket is set, and is Ping's error
// otherwise.
func (s *Store) EnsureBucket(ctx context.Context) error {
	err := s.Ping(ctx)
	if s.create && errors.Is(err, ErrBucketNotFound) {
		return s.createBucket(ctx)
	}
	return err
}

// createBucket makes the bucket in the store's region; one that another
// process made meanwhile is fine.
func (s *Store) createBucket(ctx context.Context) error {
	in := &awss3.CreateBucketInput{Bucket: &s.bucket}
	if s.region != "us-east-1" { // AWS refuses a location constraint of us-east-1
		in.CreateBucketConfiguration = &types.CreateBucketConfiguration{LocationConstraint: types.BucketLocationConstraint(s.region)}
	}
	_, err := s.client.CreateBucket(ctx, in)
	var owned *types.BucketAlreadyOwnedByYou
	if err != nil && !errors.As(err, &owned) {
		return fmt.Errorf("s3 blobs: create bucket %s at %s: %w", s.bucket, s.where(), err)
	}
	return nil
}

// where names the service: the endpoint, or AWS and the region.
func (s *Store) where() string {
	if s.endpoint != "" {
		return s.endpoint
	}
	return "AWS S3 (region " + s.region + ")"
}

// makeBucketCommand is the AWS CLI command that makes the bucket.
func (s *Store) makeBucketCommand() string {
	cmd := []string{"aws s3 mb s3://" + s.bucket}
	if s.endpoint != "" {
		cmd = append(cmd, "--endpoint-url "+s.endpoint)
	}
	cmd = append(cmd, "--region "+s.region)
	return strings.Join(cmd, " ")
}

// bucketNotFoundError is Ping's one-line answer for a missing bucket; it
// wraps ErrBucketNotFound and the service's own error.
type bucketNotFoundError struct {
	msg   string
	cause error
}

func (e *bucketNotFoundError) Error() string   { return e.msg }
func (e *bucketNotFoundError) Unwrap() []error { return []error{ErrBucketNotFound, e.cause} }
