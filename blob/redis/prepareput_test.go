package redis_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
	blobredis "github.com/imagegen/imagegen/blob/redis"
	"github.com/imagegen/imagegen/imagegentest"
)

// A write made by PreparePut and sent on another pipeline stores what Put
// stores: the same value under the same key, with the store's TTL.
func TestPreparePutStoresWhatPutStores(t *testing.T) {
	ctx := context.Background()
	mr := miniredis.RunT(t)
	rdb := goredis.NewClient(&goredis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	s, err := blobredis.New(rdb, blobredis.Config{TTL: time.Hour, Clock: imagegentest.NewClock(time.Time{})})
	if err != nil {
		t.Fatal(err)
	}
	data := []byte("\x89PNG some bytes")
	if err := s.Put(ctx, "by-put", bytes.NewReader(data), int64(len(data)), "image/png"); err != nil {
		t.Fatal(err)
	}
	w, err := s.PreparePut("by-write", data)
	if err != nil {
		t.Fatal(err)
	}
	if w.Size() <= len(data) {
		t.Fatalf("Size() = %d, want the header and %d bytes", w.Size(), len(data))
	}
	if _, err := rdb.Pipelined(ctx, func(p goredis.Pipeliner) error { w.Queue(ctx, p); return nil }); err != nil {
		t.Fatal(err)
	}
	put, err := rdb.Get(ctx, "{imagegen}:blob:by-put").Result()
	if err != nil {
		t.Fatal(err)
	}
	written, err := rdb.Get(ctx, w.Key).Result()
	if err != nil {
		t.Fatal(err)
	}
	if w.Key != "{imagegen}:blob:by-write" || written != put { // the same clock, so the same header
		t.Fatalf("write %s = %q; Put stored %q", w.Key, written, put)
	}
	if ttl := mr.TTL(w.Key); ttl != time.Hour {
		t.Fatalf("TTL = %v, want 1h", ttl)
	}
	b, err := s.Open(ctx, "by-write")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(b.Body)
	_ = b.Body.Close()
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("bytes = %q, %v", got, err)
	}
	if _, err := s.PreparePut("no/slashes", data); !errors.Is(err, imagegen.ErrInvalidBlobKey) {
		t.Fatalf("PreparePut of a bad key: %v, want ErrInvalidBlobKey", err)
	}
}
