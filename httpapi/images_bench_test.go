package httpapi_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/google/uuid"
	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
	blobfile "github.com/imagegen/imagegen/blob/file"
	blobmemory "github.com/imagegen/imagegen/blob/memory"
	blobredis "github.com/imagegen/imagegen/blob/redis"
	blobs3 "github.com/imagegen/imagegen/blob/s3"
	"github.com/imagegen/imagegen/httpapi"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/internal/testenv/apitest"
	"github.com/imagegen/imagegen/internal/testenv/redistest"
	"github.com/imagegen/imagegen/internal/testenv/s3test"
	"github.com/imagegen/imagegen/store/memory"
)

// benchPicture is the size of a real 1024x1024 PNG.
var benchPicture = bytes.Repeat([]byte("0123456789abcdef"), 2<<20/16)

// discard is a ResponseWriter that keeps nothing, so B/op is what
// serving costs, not what a recorder buffers.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(int)             {}

// imageHandler stores one benchPicture through a service on blobs and
// returns the API handler and the image's signed path.
func imageHandler(b *testing.B, blobs imagegen.BlobStore) (http.Handler, string) {
	ctx := context.Background()
	model := imagegentest.NewModel(1, func(context.Context, imagegen.Generation) ([]imagegen.GeneratedImage, error) {
		return []imagegen.GeneratedImage{{ContentType: "image/png", Data: benchPicture}}, nil
	})
	s := apitest.New(b, apitest.Config{
		Store: testenv.Memory(b, memory.Config{Retention: time.Hour, Blobs: blobs}), Model: model,
		API: func(c *httpapi.Config) { c.Limiter, c.PublicURL = allowAll{}, "https://img.example.test" },
	})
	svc := s.Service
	if _, err := svc.Grant(ctx, "u", 1, "bench"); err != nil {
		b.Fatal(err)
	}
	sub, err := svc.Submit(ctx, "u", imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := svc.RunOnce(ctx); err != nil {
		b.Fatal(err)
	}
	task, err := svc.Task(ctx, "u", sub.TaskID)
	if err != nil || task.Status != imagegen.StatusSuccess {
		b.Fatalf("task: %v %v", task, err)
	}
	return s.API, strings.TrimPrefix(s.API.ImageURLs(task)[0], "https://img.example.test")
}

func benchGet(b *testing.B, h http.Handler, path string) {
	b.SetBytes(int64(len(benchPicture)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		w := &discard{h: http.Header{}}
		h.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
		if w.h.Get("Content-Length") != "2097152" {
			b.Fatalf("answer headers %v", w.h)
		}
	}
}

// BenchmarkImageDownload serves one 2 MiB image from each BlobStore
// through the API, beside a bare http.ServeContent of the same bytes.
func BenchmarkImageDownload(b *testing.B) {
	b.Run("baseline-ServeContent", func(b *testing.B) {
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "image/png")
			http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(benchPicture))
		})
		benchGet(b, h, "/img")
	})
	stores := []struct {
		name string
		open func(b *testing.B) (imagegen.BlobStore, error)
	}{
		{"memory", func(*testing.B) (imagegen.BlobStore, error) {
			return blobmemory.New(blobmemory.Config{}), nil
		}},
		{"file", func(b *testing.B) (imagegen.BlobStore, error) {
			return blobfile.New(blobfile.Config{Dir: b.TempDir()})
		}},
		{"redis-miniredis", func(b *testing.B) (imagegen.BlobStore, error) {
			mr := miniredis.RunT(b)
			rdb := goredis.NewClient(&goredis.Options{Addr: mr.Addr()})
			b.Cleanup(func() { _ = rdb.Close() })
			return blobredis.New(rdb, blobredis.Config{})
		}},
		{"redis-real", func(b *testing.B) (imagegen.BlobStore, error) {
			rdb := redistest.Connect(b)
			prefix := "imagegen-bench-" + uuid.NewString()
			b.Cleanup(func() { redistest.DeleteKeys(b, rdb, "{"+prefix+"}:*") })
			return blobredis.New(rdb, blobredis.Config{Prefix: prefix, TTL: time.Hour})
		}},
		{"s3-gofakes3", func(b *testing.B) (imagegen.BlobStore, error) {
			b.Setenv("AWS_EC2_METADATA_DISABLED", "true")
			return blobs3.New(context.Background(), blobs3.Config{
				Bucket: s3test.Bucket, Region: s3test.Region, Endpoint: s3test.Fake(b), PathStyle: true,
				ChecksumWhenRequired: true, Credentials: s3test.Credentials,
			})
		}},
	}
	for _, store := range stores {
		b.Run(store.name, func(b *testing.B) {
			s, err := store.open(b)
			if err != nil {
				b.Fatal(err)
			}
			h, path := imageHandler(b, s)
			benchGet(b, h, path)
		})
	}
}
