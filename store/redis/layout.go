package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	goredis "github.com/redis/go-redis/v9"
)

// ErrLayoutMismatch: the store's Config.Shards differs from the number
// of shards recorded for its prefix, so the store would look for owners
// in the wrong shards (empty balances, missing tasks, credits spent
// twice). CheckLayout and Ping return it wrapped, with both numbers.
var ErrLayoutMismatch = errors.New("redis store: Config.Shards differs from the store's recorded layout")

// layoutField is the field of the layout record that holds the number
// of shards.
const layoutField = "shards"

// layout is the store's layout record, under the global tag: a hash
// whose field "shards" is the number of shards the store's data is laid
// out in.
func (k keys) layout() string { return k.tag + ":layout" }

// CheckLayout checks that this store's number of shards is the one
// recorded for its prefix, and records it when there is no record yet
// (HSETNX): the first store to check a prefix fixes its layout, for an
// empty store and for one that already holds data alike. A store whose
// number differs gets an error wrapping ErrLayoutMismatch. A successful
// check is remembered: later calls do no I/O. Ping calls it.
func (s *Store) CheckLayout(ctx context.Context) error {
	if s.layoutChecked.Load() {
		return nil
	}
	key := s.k.layout()
	var recorded *goredis.StringCmd
	// One key, so one slot: a pipeline of the two is one round trip on
	// every kind of client, a Cluster's included.
	_, err := s.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
		p.HSetNX(ctx, key, layoutField, len(s.shards))
		recorded = p.HGet(ctx, key, layoutField)
		return nil
	})
	if err != nil {
		return wrapErr("check layout", err)
	}
	n, err := parseShards(key, recorded.Val())
	if err != nil {
		return err
	}
	if n != len(s.shards) {
		return fmt.Errorf("%w: the store under %s is laid out in %s (recorded in %s), and this process has %d: "+
			"start every process of the store with Config.Shards %d (a Cluster client's default is %d, a single node's 1); "+
			"the number of shards cannot change while the store holds data (MigrateToShards copies a store of one shard into a new store of several)",
			ErrLayoutMismatch, s.k.tag, shardCount(n), key, len(s.shards), n, DefaultClusterShards)
	}
	s.layoutChecked.Store(true)
	return nil
}

// shardCount is "1 shard" or "n shards".
func shardCount(n int) string {
	if n == 1 {
		return "1 shard"
	}
	return strconv.Itoa(n) + " shards"
}

// recordedShards reads the number of shards recorded in key on rdb; 0
// when there is no record.
func recordedShards(ctx context.Context, rdb goredis.UniversalClient, key string) (int, error) {
	v, err := rdb.HGet(ctx, key, layoutField).Result()
	if isNil(err) {
		return 0, nil
	}
	if err != nil {
		return 0, wrapErr("read layout", err)
	}
	return parseShards(key, v)
}

// parseShards reads the number of shards of a layout record.
func parseShards(key, v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("redis store: the layout record %s holds %s %q, not a number of shards: something other than the store wrote it", key, layoutField, v)
	}
	return n, nil
}
