package httpapi_test

import (
	"context"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/google/uuid"
	"github.com/matryer/is"
	goredis "github.com/redis/go-redis/v9"

	blobredis "github.com/imagegen/imagegen/blob/redis"
	blobs3 "github.com/imagegen/imagegen/blob/s3"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/internal/testenv/redistest"
	"github.com/imagegen/imagegen/internal/testenv/s3test"
	"github.com/imagegen/imagegen/store/memory"
)

// bigPicture is larger than the Redis blob reader's 256 KiB chunk.
var bigPicture = func() []byte {
	b := make([]byte, 300_000)
	for i := range b {
		b[i] = byte(i % 253)
	}
	return b
}()

// redisCounter counts the commands a client sends and the bytes of the
// strings Redis answers (its hook).
type redisCounter struct {
	mu       sync.Mutex
	commands int
	bytes    int
}

// hook is the client hook that feeds c.
func (c *redisCounter) hook() redistest.Hook { return redistest.Hook{After: c.count} }

func (c *redisCounter) count(cmd goredis.Cmder) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.commands++
	if s, ok := cmd.(*goredis.StringCmd); ok {
		c.bytes += len(s.Val())
	}
}

func (c *redisCounter) reset() (commands, bytes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	commands, bytes = c.commands, c.bytes
	c.commands, c.bytes = 0, 0
	return commands, bytes
}

// redisBlobClient is a client of miniredis, or of IMAGEGEN_TEST_REDIS
// when set, for blobs alone (the records stay in the memory store).
func redisBlobClient(t *testing.T) *goredis.Client {
	if opt, ok := redisTestOptions(); ok {
		return redistest.NewClient(t, opt)
	}
	rdb := goredis.NewClient(&goredis.Options{Addr: miniredis.RunT(t).Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

func redisTestOptions() (*goredis.Options, bool) {
	url := strings.TrimSpace(os.Getenv(redistest.EnvVar))
	if url == "" {
		return nil, false
	}
	opt, err := goredis.ParseURL(url)
	return opt, err == nil
}

// Must show (issue 22): 2,000 one-byte ranges against an image on the
// Redis blob store make at most 8 Redis reads and move at most 3x the
// image's size out of Redis. (Before, each range was its own GETRANGE
// of up to 256 KiB: 2,001 reads, gigabytes.)
func TestRangesOnRedisBlobsCostOneDownload(t *testing.T) {
	is := is.New(t)
	rdb := redisBlobClient(t)
	counter := &redisCounter{}
	rdb.AddHook(counter.hook())
	prefix := "imagegen-test-" + uuid.NewString()
	blobs, err := blobredis.New(rdb, blobredis.Config{Prefix: prefix, TTL: time.Hour})
	is.NoErr(err)
	e := newEnv(t, func(o *envOptions) { o.store = testenv.Memory(t, memory.Config{Retention: retention, Blobs: blobs}) })
	path, id := e.imagePathOf(bigPicture)
	t.Cleanup(func() { _ = blobs.Delete(context.Background(), id) })
	size := len(bigPicture)

	counter.reset()
	w := e.do("GET", path, "", "", "Range", rangeHeader(2000))
	is.Equal(w.Code, http.StatusOK)
	is.Equal(w.Body.Bytes(), bigPicture)
	commands, bytes := counter.reset()
	t.Logf("2,000 ranges: %d Redis commands, %d bytes out of Redis for a %d-byte image", commands, bytes, size)
	is.True(commands <= 8)
	is.True(bytes <= 3*size)

	// A few ranges: one read of exactly each, after the one look.
	w = e.do("GET", path, "", "", "Range", "bytes=0-0,100000-100000,299999-")
	is.Equal(w.Code, http.StatusPartialContent)
	commands, bytes = counter.reset()
	is.Equal(commands, 3*3) // per part: STRLEN and header, then GETRANGE of the byte
	is.True(bytes <= 3*13)  // each part's 12-byte header and its byte
}

// Must show (issue 22): 200 ranges against an image on S3 make at most
// 2 GETs to the object store (gofakes3; moto or another service with
// IMAGEGEN_TEST_S3). Before, each range was its own GET.
func TestRangesOnS3BlobsCostOneDownload(t *testing.T) {
	is := is.New(t)
	endpoint := os.Getenv(s3test.EnvVar)
	if endpoint == "" {
		endpoint = s3test.Fake(t)
	} else {
		endpoint = s3test.Real(t)
	}
	requests := &requestCounter{next: http.DefaultTransport}
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CA_BUNDLE", "") // a bundle needs the SDK's own client; the endpoint is plain http on loopback
	blobs, err := blobs3.New(context.Background(), blobs3.Config{
		Bucket: s3test.Bucket, Prefix: "t-" + uuid.NewString() + "/", Region: s3test.Region, Endpoint: endpoint, PathStyle: true,
		ChecksumWhenRequired: true, Credentials: s3test.Credentials, HTTPClient: &http.Client{Transport: requests},
	})
	is.NoErr(err)
	e := newEnv(t, func(o *envOptions) { o.store = testenv.Memory(t, memory.Config{Retention: retention, Blobs: blobs}) })
	path, id := e.imagePathOf(bigPicture)
	t.Cleanup(func() { _ = blobs.Delete(context.Background(), id) })

	requests.reset()
	w := e.do("GET", path, "", "", "Range", rangeHeader(200))
	is.Equal(w.Code, http.StatusOK)
	is.Equal(w.Body.Bytes(), bigPicture)
	n := requests.reset()
	t.Logf("200 ranges: %v requests to the object store", n)
	is.True(n[http.MethodGet] <= 2)
	is.Equal(n[http.MethodGet]+n[http.MethodHead], 1) // one GET, nothing else

	w = e.do("GET", path, "", "", "Range", "bytes=10-19")
	is.Equal(w.Code, http.StatusPartialContent)
	is.Equal(w.Body.Bytes(), bigPicture[10:20])
	is.Equal(requests.reset()[http.MethodGet], 1)
}

// requestCounter is an http.RoundTripper that counts requests by method.
type requestCounter struct {
	next http.RoundTripper
	mu   sync.Mutex
	n    map[string]int
}

func (c *requestCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[r.Method]++
	c.mu.Unlock()
	return c.next.RoundTrip(r)
}

func (c *requestCounter) reset() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n
	c.n = map[string]int{}
	return n
}
