// Package s3 is an imagegen.BlobStore on S3-compatible object storage
// (AWS S3, MinIO, Ceph RGW, Cloudflare R2, Backblaze B2, moto...),
// through github.com/aws/aws-sdk-go-v2/service/s3. Each blob is the
// object Prefix+key in Bucket, stored with its content type.
//
// Credentials come from the standard AWS chain (AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY, AWS_PROFILE, SSO, instance roles...) unless
// Config.Credentials is set. Endpoint and PathStyle reach services other
// than AWS; ChecksumWhenRequired turns off the SDK's default request
// checksums, which several S3-compatible servers reject.
//
// Reads fetch ranges on demand (GET with Range from the position sought
// to), so a Range request moves only the bytes it asks for. The store
// also presigns GET URLs (imagegen.BlobPresigner), for image downloads
// that bypass the API process.
//
// Retention: the imagegen store's retention removes the records, and
// imagegen.Service.SweepBlobs the objects without a record. Pair it with
// a bucket lifecycle rule that expires objects under Prefix a day after
// the retention, as a backstop that costs nothing to run.
package s3

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/blob/blobkit"
)

var (
	_ imagegen.BlobStore       = (*Store)(nil)
	_ imagegen.BlobPresigner   = (*Store)(nil)
	_ imagegen.BlobRangeReader = (*Store)(nil)
)

// MaxUnseekableBody is the largest Put whose reader cannot seek: such a
// body is read into memory first (the SDK signs a seekable body).
const MaxUnseekableBody = 64 << 20

// Config configures a Store.
type Config struct {
	// Bucket holds the blobs. Required; it must exist, unless
	// CreateBucket is set.
	Bucket string
	// CreateBucket lets EnsureBucket (which blob.Open calls) create
	// Bucket when it does not exist (in Region); Ping never does. Off by
	// default: a missing bucket is then an error that says how to create
	// it (ErrBucketNotFound).
	CreateBucket bool
	// Prefix is put before every key ("images/" keeps the blobs in a
	// folder); when set, it must end with "/". List sees only objects
	// under it, so a prefix of the store's own (or a bucket) keeps
	// Service.SweepBlobs away from other objects: it deletes any listed
	// blob that has no image record. (Without the "/", "images" would
	// take "images-backup.tar" for the blob "-backup.tar".)
	Prefix string
	// Region of the bucket. Default: from the AWS chain (AWS_REGION...),
	// else "us-east-1".
	Region string
	// Endpoint is the service's base URL, for S3-compatible services
	// ("http://127.0.0.1:9000"), without credentials (refused: they
	// would be printed with the store's errors). Default: AWS.
	Endpoint string
	// PathStyle addresses the bucket in the path (endpoint/bucket/key)
	// instead of the host name; most S3-compatible services need it.
	PathStyle bool
	// ChecksumWhenRequired sends request checksums only when an
	// operation requires them (RequestChecksumCalculation WhenRequired),
	// and validates response checksums likewise.
	ChecksumWhenRequired bool
	// Credentials replaces the standard AWS chain (tests, or keys kept
	// elsewhere).
	Credentials aws.CredentialsProvider
	// HTTPClient replaces the SDK's HTTP client.
	HTTPClient *http.Client
}

// Store keeps blobs in a bucket. It is safe for concurrent use.
type Store struct {
	client  *awss3.Client
	presign *awss3.PresignClient
	bucket  string
	prefix  string
	// For Ping and EnsureBucket: where the bucket is, and whether to
	// create it.
	region, endpoint string
	create           bool
}

// New returns a Store for c. It does not call the service: a wrong
// bucket or key shows at the first Put (cmd/imagegen checks with Ping).
func New(ctx context.Context, c Config) (*Store, error) {
	if c.Bucket == "" {
		return nil, errors.New("s3 blobs: Config.Bucket is required")
	}
	if strings.HasPrefix(c.Prefix, "/") {
		return nil, fmt.Errorf("s3 blobs: Config.Prefix must not start with / (got %q)", c.Prefix)
	}
	if c.Prefix != "" && !strings.HasSuffix(c.Prefix, "/") {
		return nil, fmt.Errorf(`s3 blobs: Config.Prefix must end with "/" (got %q): the bucket's other objects that start with it would be listed as blobs, and swept`, c.Prefix)
	}
	if c.Endpoint != "" {
		// Neither the parser's error nor the endpoint is printed: either
		// may hold a secret written into the URL.
		if e, err := url.Parse(c.Endpoint); err != nil || e.User != nil || e.Host == "" {
			return nil, errors.New("s3 blobs: Config.Endpoint must be an absolute URL without credentials, such as http://127.0.0.1:9000 (it is not printed); credentials come from the AWS chain or Config.Credentials")
		}
	}
	var loads []func(*awsconfig.LoadOptions) error
	if c.Region != "" {
		loads = append(loads, awsconfig.WithRegion(c.Region))
	}
	if c.Credentials != nil {
		loads = append(loads, awsconfig.WithCredentialsProvider(c.Credentials))
	}
	if c.HTTPClient != nil {
		loads = append(loads, awsconfig.WithHTTPClient(c.HTTPClient))
	}
	if c.ChecksumWhenRequired {
		loads = append(loads,
			awsconfig.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
			awsconfig.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, loads...)
	if err != nil {
		return nil, fmt.Errorf("s3 blobs: load AWS config: %w", err)
	}
	cfg.Region = cmp.Or(cfg.Region, "us-east-1")
	client := awss3.NewFromConfig(cfg, func(o *awss3.Options) {
		if c.Endpoint != "" {
			o.BaseEndpoint = aws.String(c.Endpoint)
		}
		o.UsePathStyle = c.PathStyle
	})
	return &Store{
		client: client, presign: awss3.NewPresignClient(client), bucket: c.Bucket, prefix: c.Prefix,
		region: cfg.Region, endpoint: c.Endpoint, create: c.CreateBucket,
	}, nil
}

// Put uploads the object in one PUT (atomic: readers see the old object
// or the whole new one).
func (s *Store) Put(ctx context.Context, key string, r io.Reader, size int64, contentType string) error {
	if err := imagegen.CheckBlobKey(key); err != nil {
		return err
	}
	body, err := seekableBody(key, r, size)
	if err != nil {
		return fmt.Errorf("s3 blobs: put %s: %w", key, err)
	}
	_, err = s.client.PutObject(ctx, &awss3.PutObjectInput{
		Bucket:        &s.bucket,
		Key:           aws.String(s.prefix + key),
		Body:          body,
		ContentLength: aws.Int64(size),
		ContentType:   nonEmpty(contentType),
	})
	if err != nil {
		return fmt.Errorf("s3 blobs: put %s: %w", key, err)
	}
	return nil
}

// seekableBody returns r if it can seek and holds exactly size bytes
// from where it is, else r read into memory (at most MaxUnseekableBody).
func seekableBody(key string, r io.Reader, size int64) (io.ReadSeeker, error) {
	if rs, ok := r.(io.ReadSeeker); ok {
		cur, err := rs.Seek(0, io.SeekCurrent)
		if err != nil {
			return nil, err
		}
		end, err := rs.Seek(0, io.SeekEnd)
		if err != nil {
			return nil, err
		}
		if _, err := rs.Seek(cur, io.SeekStart); err != nil {
			return nil, err
		}
		if end-cur != size {
			return nil, fmt.Errorf("%w: blob %s: body holds %d bytes, expected %d", imagegen.ErrBlobSize, key, end-cur, size)
		}
		return rs, nil
	}
	if size > MaxUnseekableBody {
		return nil, fmt.Errorf("%w: blob %s: %d bytes from a reader that cannot seek (at most %d)", imagegen.ErrBlobSize, key, size, MaxUnseekableBody)
	}
	data, err := blobkit.Read(key, r, size)
	if err != nil {
		return nil, err
	}
	return bytes.NewReader(data), nil
}

// Open heads the object; its Body GETs from the position sought to,
// once read.
func (s *Store) Open(ctx context.Context, key string) (*imagegen.Blob, error) {
	info, err := s.Stat(ctx, key)
	if err != nil {
		return nil, err
	}
	body := &rangeReader{ctx: ctx, s: s, key: s.prefix + key, size: info.Size, etag: info.ETag}
	return &imagegen.Blob{BlobInfo: info, Body: body}, nil
}

// Stat heads the object.
func (s *Store) Stat(ctx context.Context, key string) (imagegen.BlobInfo, error) {
	if err := imagegen.CheckBlobKey(key); err != nil {
		return imagegen.BlobInfo{}, err
	}
	out, err := s.client.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: &s.bucket, Key: aws.String(s.prefix + key)})
	if err != nil {
		return imagegen.BlobInfo{}, s.wrap("stat", key, err)
	}
	return imagegen.BlobInfo{
		Key: key, Size: aws.ToInt64(out.ContentLength), ModTime: aws.ToTime(out.LastModified), ETag: aws.ToString(out.ETag),
	}, nil
}

// Delete removes the object; S3 answers a missing key like a deleted one.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := imagegen.CheckBlobKey(key); err != nil {
		return err
	}
	_, err := s.client.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: &s.bucket, Key: aws.String(s.prefix + key)})
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("s3 blobs: delete %s: %w", key, err)
	}
	return nil
}

// List pages through the objects under Prefix (1,000 a page). Objects
// whose name past Prefix is not a blob key (another folder) are skipped.
func (s *Store) List(ctx context.Context, fn func(imagegen.BlobInfo) error) error {
	pages := awss3.NewListObjectsV2Paginator(s.client, &awss3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: nonEmpty(s.prefix)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("s3 blobs: list: %w", err)
		}
		for _, o := range page.Contents {
			key := strings.TrimPrefix(aws.ToString(o.Key), s.prefix)
			if imagegen.CheckBlobKey(key) != nil {
				continue
			}
			info := imagegen.BlobInfo{Key: key, Size: aws.ToInt64(o.Size), ModTime: aws.ToTime(o.LastModified), ETag: aws.ToString(o.ETag)}
			if err := fn(info); err != nil {
				return err
			}
		}
	}
	return nil
}

// PresignGet returns a URL that GETs the object for ttl.
func (s *Store) PresignGet(ctx context.Context, key string, ttl time.Duration) (string, error) {
	if err := imagegen.CheckBlobKey(key); err != nil {
		return "", err
	}
	req, err := s.presign.PresignGetObject(ctx, &awss3.GetObjectInput{Bucket: &s.bucket, Key: aws.String(s.prefix + key)},
		awss3.WithPresignExpires(ttl))
	if err != nil {
		return "", fmt.Errorf("s3 blobs: presign %s: %w", key, err)
	}
	return req.URL, nil
}

func (s *Store) wrap(op, key string, err error) error {
	if isNotFound(err) {
		return fmt.Errorf("s3 blobs: %s: %w", key, imagegen.ErrBlobNotFound)
	}
	return fmt.Errorf("s3 blobs: %s %s: %w", op, key, err)
}

// isNotFound reports a 404 answer (NoSuchKey, NotFound).
func isNotFound(err error) bool {
	var re *awshttp.ResponseError
	return errors.As(err, &re) && re.HTTPStatusCode() == http.StatusNotFound
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
