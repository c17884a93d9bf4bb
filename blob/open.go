package blob

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/blob/file"
	"github.com/imagegen/imagegen/blob/s3"
	"github.com/imagegen/imagegen/internal/urlredact"
)

// Open returns the BlobStore a URL names:
//
//	file:///var/lib/imagegen/images   blob/file in that directory
//	s3://bucket/prefix?endpoint=http://127.0.0.1:9000&region=us-east-1&path_style=true&checksum=when_required&create_bucket=true
//
// For s3, every query parameter is optional: endpoint (default AWS),
// region (default from the AWS chain), path_style (true or false),
// checksum ("when_required" sends request checksums only when an
// operation needs them, for S3-compatible servers that reject the SDK's
// default), create_bucket (true creates the bucket when it does not
// exist; by default a missing bucket is an error that says how to create
// it). Credentials come from the standard AWS chain. The prefix is the
// URL's path; a trailing "/" is added when missing. An s3 store is
// checked with a HEAD of the bucket, which create_bucket creates if
// missing (s3.Store.EnsureBucket). A URL with user information
// (s3://key:secret@bucket), or an endpoint with some, is refused, its
// secret never printed.
func Open(ctx context.Context, rawURL string) (imagegen.BlobStore, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		// The parser's error quotes the URL, and part of it in its
		// reason ("invalid port" for a secret key with a "/" in it).
		return nil, fmt.Errorf("blob URL: %w", urlredact.Error(err, rawURL, urlredact.Userinfo))
	}
	if u.User != nil && (u.Scheme == "file" || u.Scheme == "s3") {
		return nil, fmt.Errorf("blob URL %q: credentials do not belong in the URL (they are not printed); an s3 store takes them from the AWS chain (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_PROFILE...)", redact(u))
	}
	switch u.Scheme {
	case "file":
		return openFile(u)
	case "s3":
		return openS3(ctx, u)
	case "":
		if dir, err := filepath.Abs(rawURL); err == nil && u.User == nil {
			return nil, fmt.Errorf("blob URL %q has no scheme: for a directory, write file://%s", rawURL, filepath.ToSlash(dir))
		}
		return nil, fmt.Errorf("blob URL %q: scheme must be file or s3", redact(u))
	default:
		return nil, fmt.Errorf("blob URL %q: scheme must be file or s3", redact(u))
	}
}

func openFile(u *url.URL) (imagegen.BlobStore, error) {
	if u.Host != "" && u.Host != "localhost" {
		return nil, fmt.Errorf("blob URL %q: a file URL names a local directory (file:///path)", redact(u))
	}
	if u.Path == "" || !filepath.IsAbs(u.Path) {
		return nil, fmt.Errorf("blob URL %q: the directory must be an absolute path (file:///path)", redact(u))
	}
	return file.New(file.Config{Dir: u.Path})
}

func openS3(ctx context.Context, u *url.URL) (imagegen.BlobStore, error) {
	q := u.Query()
	c := s3.Config{
		Bucket:   u.Host,
		Prefix:   strings.TrimPrefix(u.Path, "/"),
		Region:   q.Get("region"),
		Endpoint: q.Get("endpoint"),
	}
	if c.Prefix != "" && !strings.HasSuffix(c.Prefix, "/") {
		c.Prefix += "/"
	}
	for name := range q {
		switch name {
		case "region", "endpoint":
		case "path_style":
			v, err := strconv.ParseBool(q.Get(name))
			if err != nil {
				return nil, fmt.Errorf("blob URL %q: path_style must be true or false", redact(u))
			}
			c.PathStyle = v
		case "create_bucket":
			v, err := strconv.ParseBool(q.Get(name))
			if err != nil {
				return nil, fmt.Errorf("blob URL %q: create_bucket must be true or false", redact(u))
			}
			c.CreateBucket = v
		case "checksum":
			switch q.Get(name) {
			case "when_required":
				c.ChecksumWhenRequired = true
			case "when_supported":
			default:
				return nil, fmt.Errorf("blob URL %q: checksum must be when_required or when_supported", redact(u))
			}
		default:
			return nil, fmt.Errorf("blob URL %q: unknown parameter %q (want endpoint, region, path_style, checksum, create_bucket)", redact(u), name)
		}
	}
	if c.Bucket == "" {
		return nil, fmt.Errorf("blob URL %q: the bucket is missing (s3://bucket/prefix)", redact(u))
	}
	store, err := s3.New(ctx, c)
	if err != nil {
		return nil, err
	}
	if err := store.EnsureBucket(ctx); err != nil {
		return nil, err
	}
	return store, nil
}

// redact drops any user information from u, and hides any in its
// endpoint parameter, so a URL with a secret in it is never printed.
func redact(u *url.URL) string {
	c := *u
	c.User = nil
	shown := c.String()
	for _, endpoint := range u.Query()["endpoint"] {
		shown = urlredact.Text(shown, endpoint, urlredact.Userinfo)
	}
	return shown
}
