package blobtest

import (
	"io"
	"net/http"
	"testing"

	"github.com/imagegen/imagegen"
)

// ReadAll opens key in s and reads it whole, failing t if either fails.
// Tests outside this suite use it too.
func ReadAll(t testing.TB, s imagegen.BlobStore, key string) (imagegen.BlobInfo, []byte) {
	t.Helper()
	b, err := s.Open(ctx, key)
	if err != nil {
		t.Fatalf("open %s: %v", key, err)
	}
	return b.BlobInfo, readClose(t, key, b.Body)
}

// FetchPresigned GETs a presigned URL (BlobPresigner.PresignGet) with a
// plain HTTP client and returns the body, failing t unless the answer is
// 200 OK.
func FetchPresigned(t testing.TB, url string) []byte {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatalf("get %s: %v", url, err)
	}
	body := readClose(t, url, res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("get %s: status %d, want 200: %s", url, res.StatusCode, body)
	}
	return body
}

// readClose reads body, the body of what, whole and closes it, failing t
// if the read fails.
func readClose(t testing.TB, what string, body io.ReadCloser) []byte {
	t.Helper()
	defer body.Close()
	data, err := io.ReadAll(body)
	if err != nil {
		t.Fatalf("read %s: %v", what, err)
	}
	return data
}
