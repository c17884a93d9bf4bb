package blob_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/matryer/is"

	"github.com/imagegen/imagegen/blob"
	"github.com/imagegen/imagegen/blob/file"
	"github.com/imagegen/imagegen/blob/s3"
)

func TestOpenFile(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	s, err := blob.Open(context.Background(), "file://"+dir)
	is.NoErr(err)
	fs, ok := s.(*file.Store)
	is.True(ok)
	is.Equal(fs.Dir(), dir)
}

func TestOpenS3(t *testing.T) {
	is := is.New(t)
	srv, backend := fakeS3(t)
	ctx := context.Background()
	s, err := blob.Open(ctx, "s3://pics/out?endpoint="+url.QueryEscape(srv.URL)+"&region=us-east-1&path_style=true&checksum=when_required")
	is.NoErr(err)
	_, ok := s.(*s3.Store)
	is.True(ok)
	is.NoErr(s.Put(ctx, "k1", strings.NewReader("abc"), 3, "image/png"))
	obj, err := backend.HeadObject("pics", "out/k1") // the prefix gets its slash
	is.NoErr(err)
	is.Equal(obj.Size, int64(3))

	// A missing bucket fails at Open, not at the first image, saying how
	// to create it...
	_, err = blob.Open(ctx, "s3://nope?endpoint="+url.QueryEscape(srv.URL)+"&region=us-east-1&path_style=true")
	is.True(errors.Is(err, s3.ErrBucketNotFound))
	is.True(strings.Contains(err.Error(), "create_bucket=true"))
	// ... and create_bucket=true creates it.
	s, err = blob.Open(ctx, "s3://made/imgs?endpoint="+url.QueryEscape(srv.URL)+"&region=us-east-1&path_style=true&create_bucket=true")
	is.NoErr(err)
	is.NoErr(s.Put(ctx, "k2", strings.NewReader("abcd"), 4, "image/png"))
	obj, err = backend.HeadObject("made", "imgs/k2")
	is.NoErr(err)
	is.Equal(obj.Size, int64(4))
}

func TestOpenRefusesBadURLs(t *testing.T) {
	for _, u := range []string{
		"", "ftp://x/y", "file://relative/dir", "file:relative", "s3:///prefix",
		"s3://b/p?path_style=maybe", "s3://b/p?create_bucket=please", "s3://b/p?checksum=sometimes", "s3://b/p?acl=public",
	} {
		if _, err := blob.Open(context.Background(), u); err == nil {
			t.Errorf("%q was accepted", u)
		}
	}
}

func TestOpenNeverPrintsAPassword(t *testing.T) {
	_, err := blob.Open(context.Background(), "ftp://user:hunter2@host/x")
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("error %v", err)
	}
}

// A bare path is a directory meant as a file URL: the error says how to
// write it.
func TestOpenSuggestsFileURLForAPath(t *testing.T) {
	is := is.New(t)
	_, err := blob.Open(context.Background(), "/var/lib/imagegen")
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), "file:///var/lib/imagegen"))
	_, err = blob.Open(context.Background(), "images")
	abs, _ := filepath.Abs("images")
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), "file://"+filepath.ToSlash(abs)))
}

// Credentials have no place in a blob URL (the AWS chain gives them): a
// URL with user information is refused, not opened with them ignored,
// and its secret is never printed, even when the URL does not parse (a
// secret key with a "/" in it makes the host's port invalid, and the
// parser's error quotes the whole URL).
func TestOpenRefusesCredentialsInTheURL(t *testing.T) {
	srv, _ := fakeS3(t)
	query := "?endpoint=" + url.QueryEscape(srv.URL) + "&region=us-east-1&path_style=true"
	for _, tc := range []struct{ url, secret string }{
		{"s3://AKIDEXAMPLE:hunter2@pics/out" + query, "hunter2"},
		{"s3://AKIDEXAMPLE:wJalr/K7MDENG+bPxRfi@pics/out" + query, "wJalr"},
		{"s3://AKIDEXAMPLE:wJalr%zzK7MDENG@pics/out" + query, "wJalr"},
		{"file://me:hunter2@localhost" + filepath.ToSlash(t.TempDir()), "hunter2"},
	} {
		_, err := blob.Open(context.Background(), tc.url)
		switch {
		case err == nil:
			t.Errorf("%s was opened, its credentials ignored", tc.url)
		case strings.Contains(err.Error(), tc.secret):
			t.Errorf("the error prints the secret %q: %v", tc.secret, err)
		}
	}
}

// Credentials in the endpoint are credentials in the URL too: refused,
// never printed, whether the endpoint is written encoded or as it is
// (and then the server's address: an endpoint that does not answer
// must not have its error show the secret either).
func TestOpenRefusesCredentialsInTheEndpoint(t *testing.T) {
	srv, _ := fakeS3(t)
	host := strings.TrimPrefix(srv.URL, "http://")
	for _, endpoint := range []string{
		"http://AKIDEXAMPLE:hunter2@" + host,
		url.QueryEscape("http://AKIDEXAMPLE:hunter2@" + host),
		"http://AKIDEXAMPLE:hunter2@127.0.0.1:1",              // nothing answers there
		"http://AKIDEXAMPLE:hunter2@" + host + "&colour=blue", // refused for its unknown parameter, the URL quoted
		url.QueryEscape("http://AKIDEXAMPLE:hunter2@"+host) + "&path_style=maybe",
	} {
		raw := "s3://pics/out?endpoint=" + endpoint + "&region=us-east-1&path_style=true"
		_, err := blob.Open(context.Background(), raw)
		switch {
		case err == nil:
			t.Errorf("%s was opened, its credentials ignored", endpoint)
		case strings.Contains(err.Error(), "hunter2"):
			t.Errorf("the error prints the secret: %v", err)
		}
	}
}

// fakeS3 is an in-process S3 server, and its backend, holding an empty
// bucket "pics", with the environment's credentials set for it; it
// stops when t ends.
func fakeS3(t *testing.T) (*httptest.Server, *s3mem.Backend) {
	t.Helper()
	backend := s3mem.New()
	if err := backend.CreateBucket("pics"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(srv.Close)
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	return srv, backend
}
