package httpapi_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	blobmemory "github.com/imagegen/imagegen/blob/memory"
	"github.com/imagegen/imagegen/httpapi"
	"github.com/imagegen/imagegen/wire"
)

// presigningBlobs is a memory BlobStore that presigns URLs: each URL
// says the ttl it was asked for.
type presigningBlobs struct {
	*blobmemory.Store
	mu   sync.Mutex
	ttls []time.Duration
}

func (p *presigningBlobs) PresignGet(_ context.Context, key string, ttl time.Duration) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ttls = append(p.ttls, ttl)
	return "https://objects.example.test/" + key + "?expires-in=" + url.QueryEscape(ttl.String()), nil
}

// A presigned URL is a credential of its own: it must not let the image
// be fetched after the signed API URL (and the task) expired.
func TestImagePresignedURLEndsWithTheImage(t *testing.T) {
	is := is.New(t)
	// Only presigns: the image's bytes stay in the env's store.
	blobs := &presigningBlobs{Store: blobmemory.New(blobmemory.Config{})}
	e := newEnv(t, func(o *envOptions) {
		o.api = func(c *httpapi.Config) { c.PresignTTL, c.Blobs = 10*time.Minute, blobs }
	})
	clock := e.clock
	path, _ := e.imagePath()

	// Long before the image expires: the configured ttl.
	w := e.do("GET", path, "", "")
	is.Equal(w.Code, http.StatusFound)
	is.Equal(blobs.ttls[len(blobs.ttls)-1], 10*time.Minute)
	is.Equal(w.Header().Get("Cache-Control"), "private, max-age=300")

	// 90 seconds before: the URL lives 90 seconds, no more, and so
	// does the cached redirect (half of it).
	clock.Advance(retention - 90*time.Second)
	w = e.do("GET", path, "", "")
	is.Equal(w.Code, http.StatusFound)
	is.Equal(blobs.ttls[len(blobs.ttls)-1], 90*time.Second)
	is.Equal(w.Header().Get("Cache-Control"), "private, max-age="+strconv.Itoa(45))

	// Less than a second before (the signed URL still holds): a
	// presigned URL lives whole seconds, so none is made, and the image
	// is as gone as it is a moment later.
	clock.Advance(89*time.Second + 500*time.Millisecond)
	n := len(blobs.ttls)
	wantError(t, e.do("GET", path, "", ""), http.StatusNotFound, wire.APINotFound)
	is.Equal(len(blobs.ttls), n)
}
