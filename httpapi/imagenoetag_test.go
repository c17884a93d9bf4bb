package httpapi_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/store/memory"
)

// checksumlessStore keeps image records as they were before their
// checksum was recorded: no ETag to compare.
type checksumlessStore struct{ imagegen.Store }

func (s checksumlessStore) Image(ctx context.Context, id string) (*imagegen.Image, error) {
	img, err := s.Store.Image(ctx, id)
	if err == nil {
		img.Checksum = ""
	}
	return img, err
}

// "*" matches any image that exists (RFC 9110 §13.1.1, §13.1.2), also
// one recorded before checksums were (it has no ETag): If-Match: *
// downloads it and If-None-Match: * answers 304.
func TestStarMatchesAnImageWithoutETag(t *testing.T) {
	e := newEnv(t, func(o *envOptions) {
		o.store = checksumlessStore{testenv.Memory(t, memory.Config{Retention: retention})}
	})
	path, _ := e.imagePath()
	if w := e.do("GET", path, "", "", "If-Match", "*"); w.Code != http.StatusOK || w.Header().Get("ETag") != "" {
		t.Errorf("If-Match: * on an image without ETag: %d (ETag %q), want 200 without one", w.Code, w.Header().Get("ETag"))
	}
	if w := e.do("GET", path, "", "", "If-None-Match", "*"); w.Code != http.StatusNotModified {
		t.Errorf("If-None-Match: * on an image without ETag: %d, want 304", w.Code)
	}
}
