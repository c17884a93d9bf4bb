package redis_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/google/uuid"
	"github.com/matryer/is"
	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/testenv/redistest"
	redisstore "github.com/imagegen/imagegen/store/redis"
)

// layoutRedis is a Redis for the layout tests and the prefix their
// stores share: each store a process of one store.
type layoutRedis struct {
	t      *testing.T
	rdb    goredis.UniversalClient
	prefix string
}

// open returns a store of shards shards on the prefix, its keys deleted
// when the test ends.
func (r layoutRedis) open(shards int) *redisstore.Store {
	r.t.Helper()
	s, err := redisstore.New(r.rdb, redisstore.Config{Prefix: r.prefix, Shards: shards})
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { redistest.DeleteKeysOf(r.t, r.rdb, s) })
	return s
}

// recorded is the layout record's number of shards ("" for none).
func (r layoutRedis) recorded() string {
	return r.rdb.HGet(context.Background(), "{"+r.prefix+"}:layout", "shards").Val()
}

// layoutRedises runs test on miniredis and, when IMAGEGEN_TEST_REDIS is
// set, on that server under a prefix of its own.
func layoutRedises(t *testing.T, test func(t *testing.T, r layoutRedis)) {
	t.Run("miniredis", func(t *testing.T) {
		rdb := goredis.NewClient(&goredis.Options{Addr: miniredis.RunT(t).Addr()})
		t.Cleanup(func() { _ = rdb.Close() })
		test(t, layoutRedis{t: t, rdb: rdb, prefix: "imagegen"})
	})
	t.Run("redis", func(t *testing.T) {
		test(t, layoutRedis{t: t, rdb: realRedis(t), prefix: "imagegen-test-" + uuid.NewString()})
	})
}

// The first check of a prefix records its number of shards; every
// process with the same number checks out, by CheckLayout and by Ping.
func TestLayoutSameShardsChecksOut(t *testing.T) {
	layoutRedises(t, func(t *testing.T, r layoutRedis) {
		is := is.New(t)
		ctx := context.Background()
		a := r.open(4)
		is.Equal(r.recorded(), "") // New wrote nothing
		is.NoErr(a.CheckLayout(ctx))
		is.Equal(r.recorded(), "4")
		b := r.open(4)
		is.NoErr(b.Ping(ctx))
		is.NoErr(b.CheckLayout(ctx))
		is.Equal(r.recorded(), "4")
	})
}

// A process with another number of shards than the recorded one gets
// ErrLayoutMismatch from CheckLayout and from every Ping (a failed check
// is not remembered), naming both numbers; the record stays. A check
// that succeeded is remembered: Ping does not read the record again.
func TestLayoutMismatchIsRefused(t *testing.T) {
	layoutRedises(t, func(t *testing.T, r layoutRedis) {
		is := is.New(t)
		ctx := context.Background()
		eight := r.open(8)
		is.NoErr(eight.Ping(ctx))

		sixteen := r.open(16)
		err := sixteen.CheckLayout(ctx)
		is.True(errors.Is(err, redisstore.ErrLayoutMismatch))
		is.True(strings.Contains(err.Error(), "laid out in 8 shards"))
		is.True(strings.Contains(err.Error(), "this process has 16"))
		is.True(strings.Contains(err.Error(), "Config.Shards 8"))
		for range 2 {
			is.True(errors.Is(sixteen.Ping(ctx), redisstore.ErrLayoutMismatch))
		}
		is.True(errors.Is(r.open(0).Ping(ctx), redisstore.ErrLayoutMismatch)) // one shard: a single node's default
		is.Equal(r.recorded(), "8")

		// The record changed under a process that has checked: it is not
		// read again (only processes that check afresh see it), ...
		is.NoErr(r.rdb.HSet(ctx, "{"+r.prefix+"}:layout", "shards", "16").Err())
		is.NoErr(eight.Ping(ctx))
		// ... while the process that failed checks again, and now fits.
		is.NoErr(sixteen.Ping(ctx))
		is.True(errors.Is(r.open(8).CheckLayout(ctx), redisstore.ErrLayoutMismatch))
	})
}

// A store that holds data and no record (any store of before the
// record) is recorded with the number of shards of the first process
// that checks it; a process of another number is refused after that.
func TestLayoutRecordedForExistingData(t *testing.T) {
	layoutRedises(t, func(t *testing.T, r layoutRedis) {
		is := is.New(t)
		ctx := context.Background()
		old := r.open(0)
		_, err := old.AddEntry(ctx, imagegen.LedgerEntry{Owner: "alice", Kind: imagegen.LedgerGrant, Amount: 5, Ref: "g1"})
		is.NoErr(err)
		is.Equal(r.recorded(), "") // the store's data, and no record

		upgraded := r.open(0)
		is.NoErr(upgraded.Ping(ctx))
		is.Equal(r.recorded(), "1")
		b, err := upgraded.Balance(ctx, "alice")
		is.NoErr(err)
		is.Equal(b, int64(5))
		is.True(errors.Is(r.open(4).CheckLayout(ctx), redisstore.ErrLayoutMismatch))
	})
}

// MigrateToShards records the destination's number of shards once it
// has copied the store: the destination checks out, a store of one
// shard on the prefix (the copied one's) is refused, and so is a second
// run (its source now records several shards: here the source and the
// destination are one Redis, and the source's record is the
// destination's).
func TestLayoutAfterMigrateToShards(t *testing.T) {
	layoutRedises(t, func(t *testing.T, r layoutRedis) {
		is := is.New(t)
		ctx := context.Background()
		src := r.open(0)
		is.NoErr(src.Ping(ctx)) // records one shard
		// A balance, as the store keeps it (a string: miniredis's DUMP
		// takes strings only).
		is.NoErr(r.rdb.Set(ctx, "{"+r.prefix+"}:balance:alice", "7", 0).Err())

		dst := r.open(4)
		moved, err := redisstore.MigrateToShards(ctx, r.rdb, dst)
		is.NoErr(err)
		is.Equal(moved.Keys, 1) // the balance; not the layout record
		is.Equal(r.recorded(), "4")
		is.NoErr(dst.CheckLayout(ctx))
		b, err := dst.Balance(ctx, "alice")
		is.NoErr(err)
		is.Equal(b, int64(7))
		is.True(errors.Is(r.open(0).CheckLayout(ctx), redisstore.ErrLayoutMismatch))

		_, err = redisstore.MigrateToShards(ctx, r.rdb, r.open(4))
		is.True(errors.Is(err, redisstore.ErrLayoutMismatch))
	})
}

// MigrateToShards into a Redis whose prefix holds a store of another
// number of shards is refused before it copies anything; into one whose
// record names the destination's number, it goes ahead.
func TestMigrateToShardsRefusesADestinationOfAnotherLayout(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	srcRDB := goredis.NewClient(&goredis.Options{Addr: miniredis.RunT(t).Addr()})
	t.Cleanup(func() { _ = srcRDB.Close() })
	dstRDB := goredis.NewClient(&goredis.Options{Addr: miniredis.RunT(t).Addr()})
	t.Cleanup(func() { _ = dstRDB.Close() })
	src := layoutRedis{t: t, rdb: srcRDB, prefix: "imagegen"}
	is.NoErr(src.open(0).Ping(ctx))
	is.NoErr(srcRDB.Set(ctx, "{imagegen}:balance:alice", "7", 0).Err())
	dst := layoutRedis{t: t, rdb: dstRDB, prefix: "imagegen"}
	is.NoErr(dst.open(8).Ping(ctx)) // a store of 8 shards lives there

	_, err := redisstore.MigrateToShards(ctx, srcRDB, dst.open(4))
	is.True(errors.Is(err, redisstore.ErrLayoutMismatch))
	is.True(strings.Contains(err.Error(), "store of 8 shards"))
	b, err := dst.open(8).Balance(ctx, "alice")
	is.NoErr(err)
	is.Equal(b, int64(0)) // nothing copied
	is.Equal(dst.recorded(), "8")

	_, err = redisstore.MigrateToShards(ctx, srcRDB, dst.open(8))
	is.NoErr(err)
	is.Equal(dst.recorded(), "8")
	is.Equal(src.recorded(), "1") // src is not changed
}
