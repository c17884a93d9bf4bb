package bench

import (
	"bufio"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/imagegen/imagegen"
	blobfile "github.com/imagegen/imagegen/blob/file"
	blobs3 "github.com/imagegen/imagegen/blob/s3"
	"github.com/imagegen/imagegen/httpapi"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/internal/testenv/pgtest"
	"github.com/imagegen/imagegen/internal/testenv/redistest"
	"github.com/imagegen/imagegen/internal/testenv/s3test"
	"github.com/imagegen/imagegen/ratelimit"
	"github.com/imagegen/imagegen/store/memory"
	"github.com/imagegen/imagegen/store/postgres"
	redisstore "github.com/imagegen/imagegen/store/redis"
)

// The peak memory of image downloads (issue 22): one 10 MB image
// (random bytes, as a compressed image is) served by the API from each
// BlobStore to 50 concurrent clients, each downloading it rssRounds
// times. The clients run in a child process (this test binary again), so
// the figure is the server's alone: its peak RSS (VmHWM, reset after the
// setup through /proc/self/clear_refs) beside its RSS before the load.
//
//	cd bench && IMAGEGEN_BENCH_RSS=1 IMAGEGEN_TEST_REDIS=redis://127.0.0.1:6379/15 \
//	  IMAGEGEN_TEST_POSTGRES='postgres://postgres@127.0.0.1:5432/test?sslmode=disable' \
//	  IMAGEGEN_TEST_S3=http://127.0.0.1:5000 go test -run TestDownloadRSS -v
//
// Each store that needs a service skips without its variable.
const (
	rssImageSize = 10 << 20
	rssClients   = 50
	rssRounds    = 2
	rssEnv       = "IMAGEGEN_BENCH_RSS"
	rssClientEnv = "IMAGEGEN_BENCH_RSS_CLIENT" // set in the child: the URL to download
)

func TestDownloadRSS(t *testing.T) {
	if os.Getenv(rssEnv) == "" {
		t.Skip(rssEnv + " is not set: the download memory measurement (a short load run) is skipped")
	}
	for _, b := range []struct {
		name  string
		store func(t *testing.T) imagegen.Store
	}{
		{"memory", func(*testing.T) imagegen.Store { return testenv.Memory(t, memory.Config{Retention: time.Hour}) }},
		{"file", func(t *testing.T) imagegen.Store {
			blobs, err := blobfile.New(blobfile.Config{Dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			return testenv.Memory(t, memory.Config{Retention: time.Hour, Blobs: blobs})
		}},
		{"redis", func(t *testing.T) imagegen.Store {
			rdb := redistest.Connect(t)
			prefix := "imagegen-rss-" + uuid.NewString()
			t.Cleanup(func() { redistest.DeleteKeys(t, rdb, "{"+prefix+"}:*") })
			s, err := redisstore.New(rdb, redisstore.Config{Prefix: prefix, Retention: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}},
		{"s3", func(t *testing.T) imagegen.Store {
			endpoint := s3test.Real(t)
			t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
			blobs, err := blobs3.New(context.Background(), blobs3.Config{
				Bucket: s3test.Bucket, Prefix: "rss-" + uuid.NewString() + "/", Region: s3test.Region, Endpoint: endpoint,
				PathStyle: true, ChecksumWhenRequired: true, Credentials: s3test.Credentials,
			})
			if err != nil {
				t.Fatal(err)
			}
			return testenv.Memory(t, memory.Config{Retention: time.Hour, Blobs: blobs})
		}},
		{"postgres", func(t *testing.T) imagegen.Store {
			return pgtest.NewStore(t, pgtest.ConnectPool(t, 8), postgres.Config{})
		}},
	} {
		t.Run(b.name, func(t *testing.T) { measureDownloadRSS(t, b.store(t)) })
	}
}

// measureDownloadRSS stores one image through a service on store, serves
// it on loopback and reports the server's memory under the load.
func measureDownloadRSS(t *testing.T, store imagegen.Store) {
	ctx := context.Background()
	image := make([]byte, rssImageSize)
	_, _ = rand.Read(image)
	model := imagegentest.NewModel(1, func(context.Context, imagegen.Generation) ([]imagegen.GeneratedImage, error) {
		return []imagegen.GeneratedImage{{ContentType: "image/png", Data: image}}, nil
	})
	svc, err := imagegen.New(imagegen.Config{Store: store, Model: model, Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	limiter, err := ratelimit.NewMemory(ratelimit.MemoryConfig{Limit: 1000, Window: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	api, err := httpapi.New(httpapi.Config{Service: svc, Limiter: limiter, PublicURL: "http://img.test", Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	owner := "rss-" + uuid.NewString()
	if _, err := svc.Grant(ctx, owner, 1, uuid.NewString()); err != nil {
		t.Fatal(err)
	}
	sub, err := svc.Submit(ctx, owner, imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "rss"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	task, err := svc.Task(ctx, owner, sub.TaskID)
	if err != nil || task.Status != imagegen.StatusSuccess {
		t.Fatalf("task %v: %v", task, err)
	}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	url := srv.URL + strings.TrimPrefix(api.ImageURLs(task)[0], "http://img.test")

	image, model = nil, nil // only the store keeps the bytes now
	runtime.GC()
	debug.FreeOSMemory()
	before := procStatus(t, "VmRSS")
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Fatalf("reset the peak RSS: %v", err)
	}
	start := time.Now()
	child := exec.Command(os.Args[0], "-test.run=^TestDownloadRSSClient$", "-test.count=1")
	child.Env = append(os.Environ(), rssClientEnv+"="+url)
	out, err := child.CombinedOutput()
	took := time.Since(start)
	if err != nil {
		t.Fatalf("clients: %v\n%s", err, out)
	}
	peak := procStatus(t, "VmHWM")
	moved := float64(rssClients*rssRounds*rssImageSize) / (1 << 20)
	t.Logf("%d clients x %d downloads of %d MiB: RSS before %.1f MiB, peak %.1f MiB (+%.1f MiB, %.2f MiB a client), %.0f MiB in %v",
		rssClients, rssRounds, rssImageSize>>20, mib(before), mib(peak), mib(peak-before), mib(peak-before)/rssClients, moved, took.Round(time.Millisecond))
}

// TestDownloadRSSClient is the child of TestDownloadRSS: rssClients
// concurrent clients download the URL rssRounds times each and check its
// length.
func TestDownloadRSSClient(t *testing.T) {
	url := os.Getenv(rssClientEnv)
	if url == "" {
		t.Skip(rssClientEnv + " is not set: this is the load of TestDownloadRSS, run by it")
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: rssClients}, Timeout: 5 * time.Minute}
	var wg sync.WaitGroup
	errs := make(chan error, rssClients)
	for range rssClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rssRounds {
				res, err := hc.Get(url)
				if err != nil {
					errs <- err
					return
				}
				n, err := io.Copy(io.Discard, res.Body)
				_ = res.Body.Close()
				if err != nil || res.StatusCode != http.StatusOK || n != rssImageSize {
					errs <- fmt.Errorf("status %d, %d bytes, %v", res.StatusCode, n, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// procStatus reads a size field of /proc/self/status, in bytes.
func procStatus(t *testing.T, field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ":")
		if ok && name == field {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

var quietLog = slog.New(slog.DiscardHandler)
