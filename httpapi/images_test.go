package httpapi_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/blob/blobtest"
	blobs3 "github.com/imagegen/imagegen/blob/s3"
	"github.com/imagegen/imagegen/httpapi"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/internal/testenv/s3test"
	"github.com/imagegen/imagegen/store/memory"
	"github.com/imagegen/imagegen/wire"
)

// picture is what the model returns in these tests: big enough for
// ranges, and different at every offset.
var picture = func() []byte {
	b := make([]byte, 100_000)
	for i := range b {
		b[i] = byte(i % 251)
	}
	return b
}()

// imagePath runs one task to success and returns its image's signed path
// and id.
func (e *env) imagePath() (path, id string) {
	e.t.Helper()
	return e.imagePathOf(picture)
}

// imagePathOf is imagePath for a task whose image is data.
func (e *env) imagePathOf(data []byte) (path, id string) {
	e.t.Helper()
	e.model.Then(func(context.Context, imagegen.Generation) ([]imagegen.GeneratedImage, error) {
		return []imagegen.GeneratedImage{{ContentType: "image/png", Data: data}}, nil
	})
	m, _ := fields(e.t, e.submit(e.key, t2i))
	if _, err := e.svc.RunOnce(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	m, _ = fields(e.t, e.poll(e.key, m["task_id"].(string)))
	u := m["images"].([]any)[0].(string)
	path = strings.TrimPrefix(u, "https://img.example.test")
	id = strings.TrimPrefix(path[:strings.Index(path, "?")], "/api/v1/images/")
	return path, id
}

func TestImageStreamsWithValidators(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	path, _ := e.imagePath()
	sum := sha256.Sum256(picture)
	etag := `"` + hex.EncodeToString(sum[:]) + `"`

	w := e.do("GET", path, "", "")
	is.Equal(w.Code, http.StatusOK)
	is.Equal(w.Body.Bytes(), picture)
	h := w.Header()
	is.Equal(h.Get("Content-Type"), "image/png")
	is.Equal(h.Get("Content-Length"), strconv.Itoa(len(picture)))
	is.Equal(h.Get("ETag"), etag)
	is.Equal(h.Get("Accept-Ranges"), "bytes")
	is.Equal(h.Get("X-Content-Type-Options"), "nosniff")
	is.Equal(h.Get("Cache-Control"), "private, max-age="+strconv.Itoa(int(retention/time.Second))+", immutable")
	modified, err := http.ParseTime(h.Get("Last-Modified"))
	is.NoErr(err)
	is.True(modified.Equal(e.clock.Now().Truncate(time.Second)))

	// A client that has it gets 304 and no body.
	w = e.do("GET", path, "", "", "If-None-Match", etag)
	is.Equal(w.Code, http.StatusNotModified)
	is.Equal(w.Body.Len(), 0)
	w = e.do("GET", path, "", "", "If-None-Match", `"something-else"`)
	is.Equal(w.Code, http.StatusOK)
	w = e.do("GET", path, "", "", "If-Modified-Since", h.Get("Last-Modified"))
	is.Equal(w.Code, http.StatusNotModified)

	// Range: only the bytes asked for.
	w = e.do("GET", path, "", "", "Range", "bytes=1000-1999")
	is.Equal(w.Code, http.StatusPartialContent)
	is.Equal(w.Body.Bytes(), picture[1000:2000])
	is.Equal(w.Header().Get("Content-Range"), "bytes 1000-1999/"+strconv.Itoa(len(picture)))
	w = e.do("GET", path, "", "", "Range", "bytes=-10")
	is.Equal(w.Body.Bytes(), picture[len(picture)-10:])
	w = e.do("GET", path, "", "", "Range", "bytes=999999-")
	is.Equal(w.Code, http.StatusRequestedRangeNotSatisfiable)

	// HEAD: the headers, no body.
	w = e.do("HEAD", path, "", "")
	is.Equal(w.Code, http.StatusOK)
	is.Equal(w.Body.Len(), 0)
	is.Equal(w.Header().Get("Content-Length"), strconv.Itoa(len(picture)))

	// Cache-Control shrinks with the time left.
	e.clock.Advance(retention - time.Hour)
	w = e.do("GET", path, "", "")
	is.Equal(w.Header().Get("Cache-Control"), "private, max-age=3600, immutable")
}

func TestImageRecordWithoutBytesIsNotFound(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	path, id := e.imagePath()
	is.NoErr(e.stack.Store.Blobs().Delete(context.Background(), id))
	wantError(t, e.do("GET", path, "", ""), http.StatusNotFound, wire.APINotFound)
}

// TestImageExpiresMustBeCanonical: a signed URL is accepted only with
// the expiry written as it was signed, in canonical decimal: the same
// number with a sign or a leading zero is a bad URL, a 404.
func TestImageExpiresMustBeCanonical(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	path, _ := e.imagePath()
	u, err := url.Parse(path)
	is.NoErr(err)
	expires := u.Query().Get("expires")
	with := func(exp string) string {
		q := u.Query()
		q.Set("expires", exp)
		return u.Path + "?" + q.Encode()
	}
	is.Equal(e.do("GET", with(expires), "", "").Code, http.StatusOK)
	for _, exp := range []string{"+" + expires, "0" + expires, "00" + expires} {
		wantError(t, e.do("GET", with(exp), "", ""), http.StatusNotFound, wire.APINotFound)
	}
}

func TestImageRedirectsToTheCDN(t *testing.T) {
	is := is.New(t)
	e := newEnv(t, func(o *envOptions) {
		o.api = func(c *httpapi.Config) { c.ImageBaseURL = "https://cdn.example.test/images/" }
	})
	path, id := e.imagePath()
	w := e.do("GET", path, "", "")
	is.Equal(w.Code, http.StatusFound)
	is.Equal(w.Header().Get("Location"), "https://cdn.example.test/images/"+id)
	is.Equal(w.Body.Len() < 200, true) // no image bytes through this process
	// The signature still guards it, and it ends with the image.
	wantError(t, e.do("GET", path[:len(path)-2]+"xx", "", ""), http.StatusNotFound, wire.APINotFound)
	e.clock.Advance(retention + time.Second)
	wantError(t, e.do("GET", path, "", ""), http.StatusNotFound, wire.APINotFound)
}

func TestImageRedirectsToAPresignedURL(t *testing.T) {
	is := is.New(t)
	endpoint := s3test.Fake(t)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	blobs, err := blobs3.New(context.Background(), blobs3.Config{
		Bucket: s3test.Bucket, Prefix: "p/", Region: s3test.Region, Endpoint: endpoint, PathStyle: true,
		ChecksumWhenRequired: true, Credentials: s3test.Credentials,
	})
	is.NoErr(err)
	e := newEnv(t, func(o *envOptions) {
		o.store = testenv.Memory(t, memory.Config{Retention: retention, Blobs: blobs})
		o.api = func(c *httpapi.Config) {
			c.PresignTTL, c.Blobs = 10*time.Minute, blobs
			c.Clock = imagegen.SystemClock{}
		}
	})
	path, id := e.imagePath()
	w := e.do("GET", path, "", "")
	is.Equal(w.Code, http.StatusFound)
	is.Equal(w.Header().Get("Cache-Control"), "private, max-age=300")
	loc := w.Header().Get("Location")
	is.True(strings.HasPrefix(loc, endpoint+"/"+s3test.Bucket+"/p/"+id+"?"))
	is.True(strings.Contains(loc, "X-Amz-Expires=600"))
	is.Equal(blobtest.FetchPresigned(t, loc), picture)
}

func TestImageRedirectConfigErrors(t *testing.T) {
	e := newEnv(t)
	for name, c := range map[string]httpapi.Config{
		"presign without a presigning BlobStore": {PresignTTL: time.Minute},
		"both redirects":                         {PresignTTL: time.Minute, ImageBaseURL: "https://cdn.example.test"},
		"a base that is not a URL":               {ImageBaseURL: "cdn.example.test"},
		"a base with a query":                    {ImageBaseURL: "https://cdn.example.test?v=1"},
		"a base with credentials":                {ImageBaseURL: "https://u:hunter2@cdn.example.test"},
		"a base with a key in its query":         {ImageBaseURL: "https://cdn.example.test?key=hunter2"},
		"a negative presign TTL":                 {PresignTTL: -time.Second},
	} {
		c.Service, c.Limiter = e.svc, allowAll{}
		_, err := httpapi.New(c)
		if err == nil {
			t.Errorf("%s: accepted", name)
		} else if strings.Contains(err.Error(), "hunter2") { // printed at startup, to the logs
			t.Errorf("%s: the error shows the secret: %v", name, err)
		}
	}
}
