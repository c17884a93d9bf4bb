package redis_test

import (
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/google/uuid"
	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/blob/blobtest"
	blobredis "github.com/imagegen/imagegen/blob/redis"
	"github.com/imagegen/imagegen/internal/testenv/redistest"
)

func TestConformanceMiniredis(t *testing.T) {
	blobtest.Run(t, func(t *testing.T) imagegen.BlobStore {
		mr := miniredis.RunT(t)
		rdb := goredis.NewClient(&goredis.Options{Addr: mr.Addr()})
		t.Cleanup(func() { _ = rdb.Close() })
		s, err := blobredis.New(rdb, blobredis.Config{TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// TestConformanceRedis runs the suite on IMAGEGEN_TEST_REDIS, under a
// prefix of its own, deleting only its keys.
func TestConformanceRedis(t *testing.T) {
	rdb := redistest.Connect(t)
	blobtest.Run(t, func(t *testing.T) imagegen.BlobStore {
		prefix := "imagegen-blobtest-" + uuid.NewString()
		t.Cleanup(func() { redistest.DeleteKeys(t, rdb, "{"+prefix+"}:*") })
		s, err := blobredis.New(rdb, blobredis.Config{Prefix: prefix, TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
