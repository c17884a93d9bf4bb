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
	defer b.Body.Close()
	data, err := io.ReadAll(b.Body)
	if err != nil {
		t.Fatalf("read %s: %v", key, err)
	}
	return b.BlobInfo, data
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
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("read %s: %v", url, err)
	}
	if res.StatusCode != http.StatusOK {
		t.Fatalf("get %s: status %d, want 200: %s", url, res.StatusCode, body)
	}
	return body
}
