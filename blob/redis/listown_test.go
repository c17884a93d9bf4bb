package redis_test

import (
	"context"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
	blobredis "github.com/imagegen/imagegen/blob/redis"
)

// List names only blobs of the store: a key its pattern matches that is
// not where the store keeps a blob key (a name that is not a blob key,
// or another store's hash tag that the pattern's "*" matched) is
// skipped. Service.SweepBlobs deletes every listed blob without a record:
// it would delete another store's bytes, or stop at the name that is not
// a key (Delete refuses it) on every sweep, never reaching the blobs
// after it.
func TestListSkipsWhatIsNotItsBlob(t *testing.T) {
	ctx := context.Background()
	mr := miniredis.RunT(t)
	rdb := goredis.NewClient(&goredis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	plain, err := blobredis.New(rdb, blobredis.Config{Prefix: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	tagged, err := blobredis.New(rdb, blobredis.Config{
		KeyTag:      func(key string) string { return "{shop:" + key[:1] + "}" }, // a shard per first letter
		ListPattern: "{shop:*}:blob:*",
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []*blobredis.Store{plain, tagged} {
		if err := s.Put(ctx, "a-blob", strings.NewReader("abc"), 3, "image/png"); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"{shop}:blob:not a key", "{shop}:blob:../up", "{shop:a}:blob:b-elsewhere", "{shop:eu}:blob:a-other"} {
		mr.Set(k, "igb1\x00\x00\x00\x00\x00\x00\x00\x00xyz")
	}
	for name, s := range map[string]*blobredis.Store{"plain": plain, "tagged": tagged} {
		var listed []string
		if err := s.List(ctx, func(b imagegen.BlobInfo) error {
			listed = append(listed, b.Key)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if len(listed) != 1 || listed[0] != "a-blob" {
			t.Errorf("the %s store lists %q; want only its own blob, a-blob", name, listed)
		}
	}
}
