package s3_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen/internal/testenv/s3test"
)

// A server that ignores Range answers 200 with the whole object (no
// Content-Range): that is not the range asked for, and must not be read
// as it (a download would serve the image's first bytes as any range of
// it, as complete as the right ones).
func TestIgnoredRangeIsNotTheRange(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	fake, err := url.Parse(s3test.Fake(t))
	is.NoErr(err)
	proxy := httputil.NewSingleHostReverseProxy(fake)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del("Range") // a server that does not do ranges
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	s := newStore(t, srv.URL)
	data := "0123456789abcdefghij"
	is.NoErr(s.Put(ctx, "k", strings.NewReader(data), int64(len(data)), "image/png"))

	body, err := s.ReadRange(ctx, "k", 0, int64(len(data))) // the whole object: fine
	is.NoErr(err)
	got, err := io.ReadAll(body)
	is.NoErr(err)
	is.Equal(string(got), data)

	for _, r := range [][2]int64{{5, 3}, {0, 3}} {
		body, err := s.ReadRange(ctx, "k", r[0], r[1])
		if err == nil {
			got, err = io.ReadAll(body)
			_ = body.Close()
		}
		if err == nil && string(got) != data[r[0]:r[0]+r[1]] {
			t.Errorf("ReadRange(%d, %d) read %q, want %q or an error", r[0], r[1], got, data[r[0]:r[0]+r[1]])
		}
	}

	// Open's body, sought past the start, GETs from there with a Range.
	b, err := s.Open(ctx, "k")
	is.NoErr(err)
	defer b.Body.Close()
	_, err = b.Body.Seek(10, io.SeekStart)
	is.NoErr(err)
	got, err = io.ReadAll(b.Body)
	if err == nil && string(got) != data[10:] {
		t.Errorf("Open, Seek(10) read %q, want %q or an error", got, data[10:])
	}
}
