package httpapi_test

import (
	"context"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	blobmemory "github.com/imagegen/imagegen/blob/memory"
	"github.com/imagegen/imagegen/httpapi"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/store/memory"
)

// typeWritingStore is a Store whose image records get contentType,
// whatever the service asks: records as an older release wrote them,
// when it stored the type a model declared as it was.
type typeWritingStore struct {
	imagegen.Store
	contentType string
}

func (s *typeWritingStore) CompleteTask(ctx context.Context, id string, attempt int, images []imagegen.Image, seed *int64) error {
	for i := range images {
		images[i].ContentType = s.contentType
	}
	return s.Store.CompleteTask(ctx, id, attempt, images, seed)
}

// imageOfType makes an env whose one image's record has contentType,
// with the API's config changed by api, and returns it with the image's
// signed path.
func imageOfType(t *testing.T, contentType string, api func(*httpapi.Config)) (*env, string) {
	t.Helper()
	st := &typeWritingStore{Store: testenv.Memory(t, memory.Config{Retention: retention}), contentType: contentType}
	e := newEnv(t, func(o *envOptions) {
		o.store = st
		if api != nil {
			o.api = api
		}
	})
	path, id := e.imagePath()
	img, err := e.svc.Image(context.Background(), id)
	is.New(t).NoErr(err)
	is.New(t).Equal(img.ContentType, contentType) // the record holds it
	return e, path
}

// wantAttachment checks that w serves its bytes as a download of no
// type a browser would open as a page of the image's origin.
func wantAttachment(t *testing.T, w *http.Response) {
	t.Helper()
	is := is.New(t)
	is.Equal(w.Header.Get("Content-Type"), "application/octet-stream")
	is.Equal(w.Header.Get("Content-Disposition"), "attachment")
	is.Equal(w.Header.Get("X-Content-Type-Options"), "nosniff")
	is.True(strings.Contains(w.Header.Get("Content-Security-Policy"), "sandbox"))
}

// An image record whose type is not a safe image type (written before
// the worker checked types: an HTML page a model returned, an SVG) is
// never served under that type, which would run it as a page of the
// image origin: it is a download of octets, in every answer that has
// a body (whole, HEAD, one range, several ranges).
func TestImageOfAnUnsafeTypeIsServedAsAnAttachment(t *testing.T) {
	for _, ct := range []string{"text/html", "text/html; charset=utf-8", "image/svg+xml", "application/xhtml+xml", "garbage", ""} {
		t.Run(ct, func(t *testing.T) {
			is := is.New(t)
			e, path := imageOfType(t, ct, nil)

			w := e.do("GET", path, "", "")
			is.Equal(w.Code, http.StatusOK)
			is.Equal(w.Body.Bytes(), picture)
			wantAttachment(t, w.Result())

			w = e.do("HEAD", path, "", "")
			is.Equal(w.Code, http.StatusOK)
			wantAttachment(t, w.Result())

			w = e.do("GET", path, "", "", "Range", "bytes=10-19")
			is.Equal(w.Code, http.StatusPartialContent)
			is.Equal(w.Body.Bytes(), picture[10:20])
			wantAttachment(t, w.Result())

			// Several ranges: each part has the download's type too.
			w = e.do("GET", path, "", "", "Range", "bytes=0-9,5000-5009")
			is.Equal(w.Code, http.StatusPartialContent)
			is.Equal(w.Header().Get("Content-Disposition"), "attachment")
			is.Equal(w.Header().Get("X-Content-Type-Options"), "nosniff")
			mt, params, err := mime.ParseMediaType(w.Header().Get("Content-Type"))
			is.NoErr(err)
			is.Equal(mt, "multipart/byteranges")
			mr := multipart.NewReader(w.Body, params["boundary"])
			parts := 0
			for {
				p, err := mr.NextPart()
				if err == io.EOF {
					break
				}
				is.NoErr(err)
				is.Equal(p.Header.Get("Content-Type"), "application/octet-stream")
				parts++
			}
			is.Equal(parts, 2)
		})
	}
}

// A record of a safe type written in another spelling is served under
// its bare media type, as an image: inline, no Content-Disposition.
func TestImageOfASafeTypeIsServedNormalised(t *testing.T) {
	is := is.New(t)
	e, path := imageOfType(t, "Image/PNG; foo=bar", nil)
	w := e.do("GET", path, "", "")
	is.Equal(w.Code, http.StatusOK)
	is.Equal(w.Header().Get("Content-Type"), "image/png")
	is.Equal(w.Header().Get("Content-Disposition"), "")
	is.Equal(w.Header().Get("X-Content-Type-Options"), "nosniff")
	is.True(strings.Contains(w.Header().Get("Content-Security-Policy"), "sandbox"))
}

// With a CDN or presigned URLs, an image of an unsafe type is not sent
// there: the object store or CDN serves the type the object was put
// with. It is served from here instead, as an attachment.
func TestImageOfAnUnsafeTypeIsNotRedirected(t *testing.T) {
	for name, api := range map[string]func(*httpapi.Config){
		"cdn": func(c *httpapi.Config) { c.ImageBaseURL = "https://cdn.example.test/images/" },
		"presigned": func(c *httpapi.Config) {
			c.PresignTTL, c.Blobs = 10*time.Minute, &presigningBlobs{Store: blobmemory.New(blobmemory.Config{})}
		},
	} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			e, path := imageOfType(t, "text/html", api)
			w := e.do("GET", path, "", "")
			is.Equal(w.Code, http.StatusOK)
			is.Equal(w.Header().Get("Location"), "")
			is.Equal(w.Body.Bytes(), picture)
			wantAttachment(t, w.Result())

			// A safe image still goes there.
			e, path = imageOfType(t, "image/png", api)
			is.Equal(e.do("GET", path, "", "").Code, http.StatusFound)
		})
	}
}
