package httpapi_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	blobmemory "github.com/imagegen/imagegen/blob/memory"
	"github.com/imagegen/imagegen/httpapi"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/store/memory"
	"github.com/imagegen/imagegen/wire"
)

// countingBlobs counts the reads a BlobStore serves (ReadRange, Open)
// and the bytes they hand out.
type countingBlobs struct {
	imagegen.BlobStore
	reads, bytes atomic.Int64
}

func (c *countingBlobs) Open(ctx context.Context, key string) (*imagegen.Blob, error) {
	c.reads.Add(1)
	b, err := c.BlobStore.Open(ctx, key)
	if err == nil {
		b.Body = countedBody{b.Body, c}
	}
	return b, err
}

func (c *countingBlobs) ReadRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	c.reads.Add(1)
	rd, err := c.BlobStore.(imagegen.BlobRangeReader).ReadRange(ctx, key, off, n)
	if err == nil {
		rd = countedBody{readSeekCloser{rd}, c}
	}
	return rd, err
}

type countedBody struct {
	io.ReadSeekCloser
	c *countingBlobs
}

func (b countedBody) Read(p []byte) (int, error) {
	n, err := b.ReadSeekCloser.Read(p)
	b.c.bytes.Add(int64(n))
	return n, err
}

type readSeekCloser struct{ io.ReadCloser }

func (readSeekCloser) Seek(int64, int) (int64, error) { return 0, fmt.Errorf("not seekable") }

// countedEnv is an env whose images live in a countingBlobs.
func countedEnv(t *testing.T) (*env, *countingBlobs) {
	blobs := &countingBlobs{BlobStore: blobmemory.New(blobmemory.Config{})}
	e := newEnv(t, func(o *envOptions) {
		o.store = testenv.Memory(t, memory.Config{Retention: retention, Blobs: blobs})
	})
	return e, blobs
}

func TestImageRangeErrorsAreJSON(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	path, _ := e.imagePath()
	size := strconv.Itoa(len(picture))
	for _, rg := range []string{"bytes=999999-", "bytes=-0", "bytes=100000-100005", "bytes=-0,200000-"} {
		w := e.do("GET", path, "", "", "Range", rg)
		wantError(t, w, http.StatusRequestedRangeNotSatisfiable, wire.APIRangeNotSatisfiable)
		is.Equal(w.Header().Get("Content-Range"), "bytes */"+size) // rg
	}
	sum := sha256.Sum256(picture)
	etag := `"` + hex.EncodeToString(sum[:]) + `"`
	for _, h := range [][2]string{{"If-Match", `"other"`}, {"If-Match", "W/" + etag}, {"If-Unmodified-Since", e.clock.Now().Add(-time.Hour).Format(http.TimeFormat)}} {
		w := e.do("GET", path, "", "", h[0], h[1])
		wantError(t, w, http.StatusPreconditionFailed, wire.APIPreconditionFailed)
		is.Equal(w.Header().Get("ETag"), "") // an error, not the image
	}
	// Preconditions that hold serve the image.
	for _, h := range [][2]string{{"If-Match", `"other", ` + etag}, {"If-Match", "*"}, {"If-Unmodified-Since", e.clock.Now().Format(http.TimeFormat)}} {
		w := e.do("GET", path, "", "", h[0], h[1])
		is.Equal(w.Code, http.StatusOK) // h
		is.Equal(w.Body.Len(), len(picture))
	}
}

func TestImageSingleRanges(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	path, _ := e.imagePath()
	size := int64(len(picture))
	sum := sha256.Sum256(picture)
	etag := `"` + hex.EncodeToString(sum[:]) + `"`
	modified := e.clock.Now().UTC().Format(http.TimeFormat)
	for _, c := range []struct {
		header     string
		start, end int64 // inclusive
	}{
		{"bytes=1000-1999", 1000, 1999},
		{"bytes=-10", size - 10, size - 1},
		{"bytes=99990-", 99990, size - 1},
		{"bytes=0-", 0, size - 1},
		{"bytes=99990-5000000", 99990, size - 1},
		{"bytes=-5000000", 0, size - 1},
		{"Bytes=7-7", 7, 7},
		{"bytes=0-99, 50-149", 0, 149},      // overlapping: merged
		{"bytes=200-299,100-199", 100, 299}, // adjacent, out of order: merged
		{"bytes=0-9,60-69", 0, 69},          // a gap under RangeMergeGap: merged
		{"bytes=-0,5-9", 5, 9},              // the unsatisfiable one is dropped
		{"bytes=,5-9,", 5, 9},               // empty list elements
		{"bytes=999999-,99999-99999", 99999, 99999},
	} {
		w := e.do("GET", path, "", "", "Range", c.header)
		is.Equal(w.Code, http.StatusPartialContent) // c.header
		is.Equal(w.Header().Get("Content-Range"), fmt.Sprintf("bytes %d-%d/%d", c.start, c.end, size))
		is.Equal(w.Header().Get("Content-Length"), strconv.FormatInt(c.end-c.start+1, 10))
		is.Equal(w.Header().Get("Content-Type"), "image/png")
		is.Equal(w.Body.Bytes(), picture[c.start:c.end+1])
	}
	// If-Range: the range only while the validator still matches.
	for _, c := range []struct {
		ifRange string
		status  int
	}{
		{etag, http.StatusPartialContent},
		{modified, http.StatusPartialContent},
		{`"older"`, http.StatusOK},
		{"W/" + etag, http.StatusOK}, // weak tags never match If-Range
		{e.clock.Now().Add(-time.Hour).Format(http.TimeFormat), http.StatusOK},
		{"garbage", http.StatusOK},
	} {
		w := e.do("GET", path, "", "", "Range", "bytes=0-9", "If-Range", c.ifRange)
		is.Equal(w.Code, c.status) // c.ifRange
	}
	// 304 wins over Range; HEAD of a range has its headers and no body.
	w := e.do("GET", path, "", "", "Range", "bytes=0-9", "If-None-Match", etag)
	is.Equal(w.Code, http.StatusNotModified)
	is.Equal(w.Header().Get("ETag"), etag)
	w = e.do("HEAD", path, "", "", "Range", "bytes=0-9")
	is.Equal(w.Code, http.StatusPartialContent)
	is.Equal(w.Header().Get("Content-Length"), "10")
	is.Equal(w.Body.Len(), 0)
}

func TestImageMultipartRanges(t *testing.T) {
	is := is.New(t)
	e, blobs := countedEnv(t)
	path, _ := e.imagePath()
	size := int64(len(picture))
	blobs.reads.Store(0)
	w := e.do("GET", path, "", "", "Range", "bytes=50000-50099,0-9,-5")
	is.Equal(w.Code, http.StatusPartialContent)
	is.Equal(w.Header().Get("Content-Length"), strconv.Itoa(w.Body.Len()))
	mediaType, params, err := mime.ParseMediaType(w.Header().Get("Content-Type"))
	is.NoErr(err)
	is.Equal(mediaType, "multipart/byteranges")
	mr := multipart.NewReader(w.Body, params["boundary"])
	want := [][2]int64{{0, 9}, {50000, 50099}, {size - 5, size - 1}} // in ascending order
	for _, rg := range want {
		p, err := mr.NextPart()
		is.NoErr(err)
		is.Equal(p.Header.Get("Content-Range"), fmt.Sprintf("bytes %d-%d/%d", rg[0], rg[1], size))
		is.Equal(p.Header.Get("Content-Type"), "image/png")
		got, err := io.ReadAll(p)
		is.NoErr(err)
		is.Equal(got, picture[rg[0]:rg[1]+1])
	}
	_, err = mr.NextPart()
	is.Equal(err, io.EOF)
	is.Equal(blobs.reads.Load(), int64(3)) // one store read per part

	// HEAD: the same length, no body, and only a look at the store.
	head := e.do("HEAD", path, "", "", "Range", "bytes=50000-50099,0-9,-5")
	is.Equal(head.Code, http.StatusPartialContent)
	is.Equal(head.Body.Len(), 0)
	is.Equal(len(head.Header().Get("Content-Length")), len(w.Header().Get("Content-Length")))
}

// rangeHeader lists n one-byte ranges, 100 bytes apart (too far to be
// merged).
func rangeHeader(n int) string {
	specs := make([]string, n)
	for i := range specs {
		specs[i] = strconv.Itoa(100*i) + "-" + strconv.Itoa(100*i)
	}
	return "bytes=" + strings.Join(specs, ",")
}

// TestImageRangesCostOneDownload: whatever the Range header, a download
// makes at most MaxRanges store reads and moves at most the image's
// bytes out of the store. Headers that ask for more than MaxRanges
// ranges get the whole image (200).
func TestImageRangesCostOneDownload(t *testing.T) {
	is := is.New(t)
	e, blobs := countedEnv(t)
	path, _ := e.imagePath()
	size := int64(len(picture))
	for _, c := range []struct {
		name, header string
		status       int
	}{
		{"2000 one-byte ranges", rangeHeader(2000), http.StatusOK},
		{"MaxRanges+1 ranges", rangeHeader(httpapi.MaxRanges + 1), http.StatusOK},
		{"MaxRangeSpecs+1 overlapping", "bytes=" + strings.Repeat("0-10,", httpapi.MaxRangeSpecs) + "0-10", http.StatusOK},
		{"MaxRangeSpecs overlapping", "bytes=" + strings.Repeat("0-10,", httpapi.MaxRangeSpecs-1) + "0-10", http.StatusPartialContent},
		{"the whole image many times", "bytes=" + strings.Repeat("0-,", 40) + "0-", http.StatusPartialContent},
		{"invalid syntax", "bytes=5-1", http.StatusOK},
		{"not bytes", "pages=1-2", http.StatusOK},
		{"nothing listed", "bytes=", http.StatusOK},
		{"MaxRanges spread ranges", "bytes=0-0,1000-1000,2000-2000,3000-3000", http.StatusPartialContent},
	} {
		blobs.reads.Store(0)
		blobs.bytes.Store(0)
		w := e.do("GET", path, "", "", "Range", c.header)
		is.Equal(w.Code, c.status) // c.name
		if c.status == http.StatusOK {
			is.Equal(w.Body.Bytes(), picture)
		}
		is.True(blobs.reads.Load() <= httpapi.MaxRanges) // c.name: store reads
		is.True(blobs.bytes.Load() <= size)              // c.name: bytes out of the store
	}
}
