package server_test

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
	blobs3 "github.com/imagegen/imagegen/blob/s3"
	"github.com/imagegen/imagegen/health"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/nettest"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/internal/testenv/s3test"
	"github.com/imagegen/imagegen/server"
	"github.com/imagegen/imagegen/store/memory"
	redisstore "github.com/imagegen/imagegen/store/redis"
)

// readiness answers the probe of server.ReadyChecks for cfg, with the
// errors shown (health.Config.ShowErrors), to see what each check says.
func readiness(t *testing.T, cfg imagegen.Config) (int, health.Status) {
	t.Helper()
	h, err := health.New(health.Config{Checks: server.ReadyChecks(cfg, false), Timeout: time.Second,
		ShowErrors: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	h.Register(mux)
	code, st, _ := probe(t, mux, "/readyz")
	return code, st
}

// A Redis that refuses connections reads as such (go-redis retries until
// the deadline; the error said only "no answer within 1s" before), and
// its blobs (the Redis store's own) are down for the same reason.
func TestReadinessSaysTheRedisConnectionWasRefused(t *testing.T) {
	is := is.New(t)
	rdb := goredis.NewClient(&goredis.Options{Addr: nettest.ClosedAddr(t)})
	t.Cleanup(func() { _ = rdb.Close() })
	store, err := redisstore.New(rdb, redisstore.Config{})
	is.NoErr(err)
	code, st := readiness(t, imagegen.Config{Store: store, Model: imagegentest.NewModel(1)})
	is.Equal(code, http.StatusServiceUnavailable)
	is.Equal(st.Down, []string{"store"})
	is.Equal(st.Checks["store"], "connection refused")
	is.True(strings.HasPrefix(st.Errors["store"], "connection refused: redis store: ping: "))
	is.Equal(st.Checks["blobs"], "connection refused")
}

// The image store alone down leaves the process ready (documented in
// server.BlobsCheck), and the probe says why: refused, or no answer.
func TestReadinessReportsTheImageStore(t *testing.T) {
	is := is.New(t)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	blobsAt := func(endpoint string) imagegen.BlobStore {
		b, err := blobs3.New(context.Background(), blobs3.Config{
			Bucket: s3test.Bucket, Region: s3test.Region, Endpoint: endpoint, PathStyle: true,
			ChecksumWhenRequired: true, Credentials: s3test.Credentials,
		})
		is.NoErr(err)
		return b
	}
	cfg := func(b imagegen.BlobStore) imagegen.Config {
		return imagegen.Config{Store: testenv.Memory(t, memory.Config{Blobs: b}), Model: imagegentest.NewModel(1)}
	}

	code, st := readiness(t, cfg(blobsAt(s3test.Fake(t))))
	is.Equal(code, http.StatusOK)
	is.Equal(st.Checks, map[string]string{"store": "ok", "blobs": "ok"})

	code, st = readiness(t, cfg(blobsAt("http://"+nettest.ClosedAddr(t))))
	is.Equal(code, http.StatusOK) // ready: only the image store is down
	is.Equal(st.Degraded, []string{"blobs"})
	is.Equal(st.Checks["blobs"], "connection refused")

	hanging := "http://" + nettest.HangingAddr(t)
	code, st = readiness(t, cfg(blobsAt(hanging)))
	is.Equal(code, http.StatusOK)
	is.Equal(st.Checks["blobs"], "timeout")
	is.True(strings.HasPrefix(st.Errors["blobs"], "timeout: "))
}
