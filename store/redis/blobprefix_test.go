package redis_test

import (
	"context"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
	redisstore "github.com/imagegen/imagegen/store/redis"
)

// A sharded store's blobs are listed with the pattern "{prefix:*}:blob:*",
// which also matches the blobs of a store whose prefix starts with
// "prefix:" on the same Redis ("shop:eu"'s "{shop:eu}:blob:<id>"). Its
// List must not take them for its own: Service.SweepBlobs finds no record
// of theirs in this store and deletes every listed blob without one.
func TestShardedBlobsListOnlyTheirOwn(t *testing.T) {
	ctx := context.Background()
	mr := miniredis.RunT(t)
	rdb := goredis.NewClient(&goredis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	open := func(prefix string, shards int) *redisstore.Store {
		s, err := redisstore.New(rdb, redisstore.Config{Prefix: prefix, Shards: shards})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	shop, eu := open("shop", 4), open("shop:eu", 1)
	mine, theirs := imagegen.NewOwnedID("alice"), imagegen.NewOwnedID("bob")
	if err := shop.Blobs().Put(ctx, mine, strings.NewReader("mine"), 4, "image/png"); err != nil {
		t.Fatal(err)
	}
	if err := eu.Blobs().Put(ctx, theirs, strings.NewReader("theirs"), 6, "image/png"); err != nil {
		t.Fatal(err)
	}
	var listed []string
	if err := shop.Blobs().List(ctx, func(b imagegen.BlobInfo) error {
		listed = append(listed, b.Key)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(listed) != 1 || listed[0] != mine {
		t.Fatalf("store shop lists the blobs %q; want only its own, %q (not store shop:eu's %q)", listed, mine, theirs)
	}
}
