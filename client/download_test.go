package client_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen/client"
)

// Download stops at the client's limit, whether or not the server says
// the size first.
func TestDownloadLimit(t *testing.T) {
	image := strings.Repeat("p", 1000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("chunked") == "" {
			w.Header().Set("Content-Length", "1000")
		}
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write([]byte(image))
		w.(http.Flusher).Flush()
	}))
	defer srv.Close()
	for _, tc := range []struct {
		name  string
		limit int64
		query string
		err   error
	}{
		{"within the limit", 1000, "", nil},
		{"within the limit, size unknown", 1000, "?chunked=1", nil},
		{"over the limit by its Content-Length", 999, "", client.ErrTooLarge},
		{"over the limit while reading", 999, "?chunked=1", client.ErrTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			c, err := client.New(srv.URL, "key-0123456789abcdef", client.WithMaxDownload(tc.limit))
			is.NoErr(err)
			var buf bytes.Buffer
			err = c.Download(context.Background(), srv.URL+"/api/v1/images/x"+tc.query, &buf)
			if tc.err == nil {
				is.NoErr(err)
				is.Equal(buf.String(), image)
				return
			}
			is.True(errors.Is(err, tc.err))
			is.True(buf.Len() <= int(tc.limit)) // never past the limit
		})
	}
}
