package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen/internal/redisglob"
)

// ErrQueueNotEmpty: MigrateToShards found pending or leased tasks in the
// store it was to copy. Let the queue drain first.
var ErrQueueNotEmpty = errors.New("redis store: the store to move has pending or leased tasks: stop submits and let the workers finish them first")

// Migrated counts what MigrateToShards copied.
type Migrated struct {
	Keys  int // keys copied whole (with their TTLs)
	Index int // entries of the indexes of all tasks and of callbacks, split among the shards
}

// MigrateToShards copies a store of one shard (a single-node store, its
// keys under "{prefix}") at src into dst, a store of several shards with
// the same prefix (a Cluster's): every key goes to its owner's or its
// id's shard, with its TTL (DUMP and RESTORE), and the indexes of all
// tasks and of due callbacks are split among the shards. Tasks and
// images made before their ids carried an owner's mark live on in shard
// 0, where lookups by their ids look: they stay readable, listed and
// downloadable until their retention ends. Keys already in dst are
// replaced, so a run that failed can be run again.
//
// The queue must be empty (ErrQueueNotEmpty otherwise): stop the API
// processes (or their submits), let the workers finish, run the
// migration, and start every process on the Cluster. src is not
// changed. Fair-share positions and model pauses start afresh.
//
// Once every key is copied, dst's layout record is set to dst's number
// of shards (see CheckLayout), so that dst's processes check out and a
// process of another number of shards is refused; src's record is not
// copied. A src whose record names more than one shard is refused with
// ErrLayoutMismatch, before anything is copied, and so is a dst whose
// record names another number than dst's: another store lives there
// under the prefix. A record of one shard in dst is taken over (when
// src and dst are one Redis, it is src's own).
func MigrateToShards(ctx context.Context, src goredis.UniversalClient, dst *Store) (Migrated, error) {
	var m Migrated
	if !dst.sharded {
		return m, errors.New("redis store: MigrateToShards copies into a store of several shards (Config.Shards > 1, or a Cluster client)")
	}
	tag := dst.k.tag // "{prefix}": the single-node layout's only tag
	if err := dst.checkMigrationLayouts(ctx, src); err != nil {
		return m, err
	}
	for _, queue := range []string{"pending", "leases"} {
		n, err := src.ZCard(ctx, tag+":"+queue).Result()
		if err != nil {
			return m, fmt.Errorf("redis store: migrate: %w", err)
		}
		if n > 0 {
			return m, fmt.Errorf("%w (%d in %s)", ErrQueueNotEmpty, n, queue)
		}
	}
	var cursor uint64
	for {
		keys, next, err := src.Scan(ctx, cursor, redisglob.Escape(tag)+":*", 500).Result()
		if err != nil {
			return m, fmt.Errorf("redis store: migrate: %w", err)
		}
		for _, key := range keys {
			n, err := dst.migrateKey(ctx, src, key)
			if err != nil {
				return m, fmt.Errorf("redis store: migrate %s: %w", key, err)
			}
			if strings.HasSuffix(key, ":all") || strings.HasSuffix(key, ":webhooks") {
				m.Index += n
			} else {
				m.Keys += n
			}
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	// Last: a run that failed before here leaves dst's record as it was.
	if err := dst.rdb.HSet(ctx, dst.k.layout(), layoutField, len(dst.shards)).Err(); err != nil {
		return m, fmt.Errorf("redis store: migrate: record the layout: %w", err)
	}
	return m, nil
}

// checkMigrationLayouts refuses a migration from src into s whose
// layout records say that src is not a store of one shard, or that s's
// prefix there holds a store of another number of shards.
func (s *Store) checkMigrationLayouts(ctx context.Context, src goredis.UniversalClient) error {
	key := s.k.layout() // src's record has the same name: one prefix
	from, err := recordedShards(ctx, src, key)
	if err != nil {
		return fmt.Errorf("redis store: migrate: %w", err)
	}
	if from > 1 {
		return fmt.Errorf("%w: the store to copy is laid out in %s (recorded in %s), and MigrateToShards copies a store of one shard", ErrLayoutMismatch, shardCount(from), key)
	}
	to, err := recordedShards(ctx, s.rdb, key)
	if err != nil {
		return fmt.Errorf("redis store: migrate: %w", err)
	}
	if to != 0 && to != 1 && to != len(s.shards) {
		return fmt.Errorf("%w: the destination already holds a store of %s under %s (recorded in %s), and this one has %d: copy onto a Redis where the prefix is free",
			ErrLayoutMismatch, shardCount(to), s.k.tag, key, len(s.shards))
	}
	return nil
}

// migrateKey copies one key of the single-node layout to its place in
// s; it returns how many keys (or index entries) it wrote.
func (s *Store) migrateKey(ctx context.Context, src goredis.UniversalClient, key string) (int, error) {
	rest := strings.TrimPrefix(key, s.k.tag+":")
	kind, name, _ := strings.Cut(rest, ":")
	var to string
	switch kind {
	case "all", "webhooks":
		return s.splitIndex(ctx, src, key, kind)
	case "pending", "leases", "fair", "vtag", "vtime", "tseq", "model", "paused", "run":
		return 0, nil // the queue is empty; fair-share state and pauses start afresh
	case "layout":
		return 0, nil // src's record; MigrateToShards writes dst's once the copy is done
	case "hookclaim":
		return 0, nil // a webhook claim's record, for its run sent again: no run of src's claims is sent to dst
	case "task", "image", "blob":
		to = s.byID(name).tag + ":" + rest
	case "tasks", "balance", "ledger", "refs", "sched", "apikeys":
		to = s.byOwner(name).tag + ":" + rest
	case "idem": // idem:<len(owner)>:<owner>:<key>
		n, owner, _ := strings.Cut(name, ":")
		if l, err := strconv.Atoi(n); err == nil && l <= len(owner) {
			owner = owner[:l]
		}
		to = s.byOwner(owner).tag + ":" + rest
	default: // secret, pstats, apikey, delkey, session(s): global, same name
		to = key
	}
	return 1, copyKey(ctx, src, s.rdb, key, to)
}

// copyKey copies key from src to dst under the name to, TTL and all.
func copyKey(ctx context.Context, src, dst goredis.UniversalClient, key, to string) error {
	dump, err := src.Dump(ctx, key).Result()
	if isNil(err) {
		return nil // expired meanwhile
	}
	if err != nil {
		return err
	}
	ttl, err := src.PTTL(ctx, key).Result()
	if err != nil {
		return err
	}
	// go-redis gives PTTL's -1 (no expiry) and -2 (no such key) as they
	// are; RESTORE takes a TTL of 0 as no expiry.
	switch {
	case ttl == -1:
		ttl = 0 // no expiry
	case ttl <= 0:
		return nil // gone since the DUMP (-2), or expiring within the millisecond (0): a copy would never expire
	}
	return dst.RestoreReplace(ctx, to, ttl, dump).Err()
}

// splitIndex adds the entries of a sorted set of task ids (the index of
// all tasks, "<created>:<id>", or the due callbacks, "<task id>[:event]")
// to the same set of each entry's shard.
func (s *Store) splitIndex(ctx context.Context, src goredis.UniversalClient, key, kind string) (int, error) {
	entries, err := src.ZRangeWithScores(ctx, key, 0, -1).Result()
	if err != nil {
		return 0, err
	}
	byShard := map[string][]goredis.Z{}
	for _, z := range entries {
		member, _ := z.Member.(string)
		id := member
		if kind == "all" {
			_, id, _ = strings.Cut(member, ":")
		}
		tag := s.byID(id).tag
		byShard[tag] = append(byShard[tag], z)
	}
	for tag, zs := range byShard {
		if err := s.rdb.ZAdd(ctx, tag+":"+kind, zs...).Err(); err != nil {
			return 0, err
		}
	}
	return len(entries), nil
}
