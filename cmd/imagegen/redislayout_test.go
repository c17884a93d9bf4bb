package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	redisstore "github.com/imagegen/imagegen/store/redis"
)

// serve refuses to start on a Redis whose store is laid out in another
// number of shards than its client gives it (here 16, a Cluster's
// default, where serve on one node has one): it would read and write
// owners in the wrong shards. The record is left as it was.
func TestServeRefusesAStoreOfAnotherLayout(t *testing.T) {
	is := is.New(t)
	url, rdb, _ := testRedisURL(t)
	is.NoErr(rdb.HSet(ctx, "{imagegen}:layout", "shards", "16").Err())

	runCtx, cancel := context.WithTimeout(ctx, 20*time.Second) // serving would end here, with no error
	defer cancel()
	var stdout, stderr syncBuffer
	err := run(runCtx, []string{"serve", "-addr", "127.0.0.1:0", "-redis", url}, func(string) string { return "" }, &stdout, &stderr)
	is.True(errors.Is(err, redisstore.ErrLayoutMismatch))
	is.True(runCtx.Err() == nil) // refused at once
	is.True(strings.HasPrefix(err.Error(), "-redis: "))
	is.True(strings.Contains(err.Error(), "the store under {imagegen} is laid out in 16 shards (recorded in {imagegen}:layout), and this process has 1"))
	is.True(!strings.Contains(stderr.String(), "imagegen serving"))
	is.Equal(rdb.HGet(ctx, "{imagegen}:layout", "shards").Val(), "16")
}

// serve on a Redis of the same layout, and on a new one, starts (and
// records the layout of the new one).
func TestServeStartsOnAStoreOfItsLayout(t *testing.T) {
	is := is.New(t)
	url, rdb, _ := testRedisURL(t)
	s := startServe(t, nil, "-redis", url)
	is.NoErr(s.stop())
	is.Equal(rdb.HGet(ctx, "{imagegen}:layout", "shards").Val(), "1")
	s = startServe(t, nil, "-redis", url)
	is.NoErr(s.stop())
}
