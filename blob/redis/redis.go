// Package redis is an imagegen.BlobStore in Redis: each blob is one
// string, "{prefix}:blob:<key>", with an optional TTL. It is the Redis
// store's default, so one Redis holds records and bytes; at a few
// thousand large images a day, move the bytes to blob/file or blob/s3.
//
// The value is a 12-byte header ("igb1" and the write time in Unix
// milliseconds, big-endian) followed by the bytes. Reads fetch ranges
// (GETRANGE, 256 KiB at a time), so serving an image never copies it
// whole into the API process. Values written before the header existed
// (plain bytes) are still read, with an unknown (zero) ModTime; an empty
// legacy value reads as missing.
//
// On Redis Cluster every key of a store shares one hash tag (one slot),
// like the Redis store's own keys.
package redis

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/blob/blobkit"
	"github.com/imagegen/imagegen/internal/dialwatch"
	"github.com/imagegen/imagegen/internal/groupcommit"
	"github.com/imagegen/imagegen/internal/redisglob"
)

var (
	_ imagegen.BlobStore       = (*Store)(nil)
	_ imagegen.BlobRangeReader = (*Store)(nil)
)

// Config configures a Store.
type Config struct {
	// Prefix names the keys: "{Prefix}:blob:<key>". Default "imagegen",
	// the Redis store's default, so its blobs and records share a tag.
	Prefix string
	// TTL, when positive, expires each blob that long after its Put: a
	// backstop for blobs nothing deletes. Zero keeps blobs until deleted.
	TTL time.Duration
	// Clock stamps each blob's ModTime. Default: imagegen.SystemClock.
	Clock imagegen.Clock
	// KeyTag, when set, gives each blob key its hash tag instead of
	// "{Prefix}" (the Redis store spread over shards keeps an image's
	// bytes in its task's shard); ListPattern then is the SCAN pattern
	// that matches every blob of the store.
	KeyTag      func(key string) string
	ListPattern string
}

// Store keeps blobs in Redis. It is safe for concurrent use.
type Store struct {
	rdb   goredis.UniversalClient
	pre   string                  // "{prefix}:blob:"
	tag   func(key string) string // nil: every key under pre
	match string                  // SCAN pattern of every blob
	ttl   time.Duration
	clock imagegen.Clock
	sets  groupcommit.Batcher[Write, struct{}]
	dials *dialwatch.Watch // names a refused connection behind a deadline
}

// New returns a Store on rdb.
func New(rdb goredis.UniversalClient, c Config) (*Store, error) {
	switch {
	case rdb == nil:
		return nil, errors.New("redis blobs: client is required")
	case strings.ContainsAny(c.Prefix, "{}"):
		return nil, fmt.Errorf("redis blobs: Config.Prefix must not contain braces (got %q)", c.Prefix)
	case c.TTL < 0:
		return nil, fmt.Errorf("redis blobs: Config.TTL must not be negative (got %v)", c.TTL)
	}
	s := &Store{
		rdb:   rdb,
		pre:   "{" + cmp.Or(c.Prefix, "imagegen") + "}:blob:",
		ttl:   c.TTL,
		clock: cmp.Or[imagegen.Clock](c.Clock, imagegen.SystemClock{}),
		tag:   c.KeyTag,
	}
	s.match = redisglob.Escape(s.pre) + "*"
	if c.KeyTag != nil {
		if c.ListPattern == "" {
			return nil, errors.New("redis blobs: Config.KeyTag needs a ListPattern")
		}
		s.match = c.ListPattern
	}
	s.dials = dialwatch.Attach(rdb)
	s.sets = groupcommit.Batcher[Write, struct{}]{Run: s.runSets, MaxBatch: 64, MaxInFlight: 4,
		Size: Write.Size, MaxSize: MaxBatchBytes}
	return s, nil
}

// MaxBatchBytes bounds the bytes of the Puts that share a pipeline
// (group commit), and of the successes' bytes store/redis sends together.
const MaxBatchBytes = 16 << 20

const (
	magic      = "igb1"
	headerLen  = len(magic) + 8
	chunkBytes = 256 << 10
)

// Put stores the bytes, header first, in one SET; Puts that arrive
// together share a pipeline.
func (s *Store) Put(ctx context.Context, key string, r io.Reader, size int64, _ string) error {
	buf, err := s.encode(key, r, size)
	if err != nil {
		return err
	}
	if _, err := s.sets.Do(ctx, s.write(key, buf)); err != nil {
		return fmt.Errorf("redis blobs: put %s: %w", key, err)
	}
	return nil
}

// encode returns the value Put stores for key: the header, then the
// size bytes of r.
func (s *Store) encode(key string, r io.Reader, size int64) ([]byte, error) {
	buf, err := s.header(key, size)
	if err != nil {
		return nil, err
	}
	buf, err = blobkit.Append(buf, key, r, size)
	if err != nil {
		return nil, fmt.Errorf("redis blobs: put %s: %w", key, err)
	}
	return buf, nil
}

// header checks a Put of size bytes under key and returns the value's
// header, with room for the bytes.
func (s *Store) header(key string, size int64) ([]byte, error) {
	if err := imagegen.CheckBlobKey(key); err != nil {
		return nil, err
	}
	if size < 0 || size > 512<<20-int64(headerLen) {
		return nil, fmt.Errorf("redis blobs: %w: size %d is outside 0..512 MiB", imagegen.ErrBlobSize, size)
	}
	buf := make([]byte, headerLen, int64(headerLen)+size)
	copy(buf, magic)
	binary.BigEndian.PutUint64(buf[len(magic):], uint64(s.clock.Now().UnixMilli()))
	return buf, nil
}

// Write is a Put of data under key made ready for another store's
// pipeline: the SET to send and the key it writes.
type Write struct {
	Key   string // the Redis key that holds the blob
	value []byte
	ttl   time.Duration
}

// PreparePut encodes data as Put would store it under key, for a caller
// that sends it in a round trip of its own (Write.Queue), with its own
// writes: store/redis sends a success's bytes with the script that
// records them, and the script checks that Write.Key exists.
func (s *Store) PreparePut(key string, data []byte) (Write, error) {
	buf, err := s.header(key, int64(len(data)))
	if err != nil {
		return Write{}, err
	}
	return s.write(key, append(buf, data...)), nil
}

// write is the SET of value, a blob's header and bytes, under key.
func (s *Store) write(key string, value []byte) Write {
	return Write{Key: s.rkey(key), value: value, ttl: s.ttl}
}

// Queue adds w's SET to p.
func (w Write) Queue(ctx context.Context, p goredis.Pipeliner) *goredis.StatusCmd {
	return p.Set(ctx, w.Key, w.value, w.ttl)
}

// Size is how many bytes w sends.
func (w Write) Size() int { return len(w.value) }

// rkey is the Redis key of a blob key.
func (s *Store) rkey(key string) string {
	if s.tag != nil {
		return s.tag(key) + ":blob:" + key
	}
	return s.pre + key
}

// blobKey is the blob key of a Redis key.
func (s *Store) blobKey(rkey string) string {
	if s.tag != nil {
		_, key, _ := strings.Cut(rkey, "}:blob:")
		return key
	}
	return strings.TrimPrefix(rkey, s.pre)
}

// runSets sends the Puts that arrive together (at most 64, 16 MiB) in
// one pipeline: one round trip for the batch.
func (s *Store) runSets(ctx context.Context, batch []*groupcommit.Call[Write, struct{}]) {
	cmds := make([]*goredis.StatusCmd, len(batch))
	_, _ = s.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, c := range batch {
			cmds[i] = c.Req.Queue(ctx, p)
		}
		return nil
	})
	for i, c := range batch {
		c.Err = cmds[i].Err()
	}
}

// Open returns the blob; its Body reads ranges on demand (at most
// chunkBytes per round trip, from where it was sought to).
func (s *Store) Open(ctx context.Context, key string) (*imagegen.Blob, error) {
	info, offset, err := s.stat(ctx, key)
	if err != nil {
		return nil, err
	}
	return &imagegen.Blob{BlobInfo: info, Body: s.reader(ctx, key, info, offset, 0, info.Size)}, nil
}

// Stat reads the blob's header and length.
func (s *Store) Stat(ctx context.Context, key string) (imagegen.BlobInfo, error) {
	info, _, err := s.stat(ctx, key)
	return info, err
}

// stat returns the info and the offset of the bytes in the value.
func (s *Store) stat(ctx context.Context, key string) (imagegen.BlobInfo, int64, error) {
	if err := imagegen.CheckBlobKey(key); err != nil {
		return imagegen.BlobInfo{}, 0, err
	}
	var head *goredis.StringCmd
	var n *goredis.IntCmd
	start := time.Now()
	_, err := s.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
		n = p.StrLen(ctx, s.rkey(key))
		head = p.GetRange(ctx, s.rkey(key), 0, int64(headerLen)-1)
		return nil
	})
	if err != nil {
		return imagegen.BlobInfo{}, 0, fmt.Errorf("redis blobs: stat %s: %w", key, s.dials.Explain(err, start))
	}
	if n.Val() == 0 { // a missing key; every value written has a header
		return imagegen.BlobInfo{}, 0, fmt.Errorf("redis blobs: %s: %w", key, imagegen.ErrBlobNotFound)
	}
	info, offset := decodeHeader(key, head.Val(), n.Val())
	return info, offset, nil
}

// decodeHeader makes the info of a value whose first bytes are head and
// whose length is n.
func decodeHeader(key, head string, n int64) (imagegen.BlobInfo, int64) {
	info := imagegen.BlobInfo{Key: key, Size: n}
	offset := int64(0)
	if len(head) == headerLen && head[:len(magic)] == magic {
		offset = int64(headerLen)
		msec := int64(binary.BigEndian.Uint64([]byte(head[len(magic):])))
		info.ModTime = time.UnixMilli(msec)
		info.Size = n - offset
	}
	info.ETag = `"` + strconv.FormatInt(info.ModTime.UnixMilli(), 36) + "-" + strconv.FormatInt(info.Size, 36) + `"`
	return info, offset
}

// Delete removes the blob.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := imagegen.CheckBlobKey(key); err != nil {
		return err
	}
	if err := s.rdb.Del(ctx, s.rkey(key)).Err(); err != nil {
		return fmt.Errorf("redis blobs: delete %s: %w", key, err)
	}
	return nil
}

// List scans the store's keys (SCAN, 500 at a time) and reads each
// one's header in a pipeline; keys the scan's pattern matches that are
// not the store's blobs are skipped (own). On a Cluster every master is
// scanned at once, and fn is still called from one goroutine at a time,
// and not again once it returned an error.
func (s *Store) List(ctx context.Context, fn func(imagegen.BlobInfo) error) error {
	scan := func(ctx context.Context, c goredis.UniversalClient, fn func(imagegen.BlobInfo) error) error {
		var cursor uint64
		for {
			keys, next, err := c.Scan(ctx, cursor, s.match, 500).Result()
			if err != nil {
				return fmt.Errorf("redis blobs: list: %w", err)
			}
			if err := s.listBatch(ctx, c, keys, fn); err != nil {
				return err
			}
			if cursor = next; cursor == 0 {
				return nil
			}
		}
	}
	if cc, ok := s.rdb.(*goredis.ClusterClient); ok {
		serial := serialFn(fn)
		return cc.ForEachMaster(ctx, func(ctx context.Context, c *goredis.Client) error { return scan(ctx, c, serial) })
	}
	return scan(ctx, s.rdb, fn)
}

// serialFn wraps List's fn for callers on several goroutines (one per
// master): one call at a time, and after an error only that error.
func serialFn(fn func(imagegen.BlobInfo) error) func(imagegen.BlobInfo) error {
	var mu sync.Mutex
	var failed error
	return func(b imagegen.BlobInfo) error {
		mu.Lock()
		defer mu.Unlock()
		if failed == nil {
			failed = fn(b)
		}
		return failed
	}
}

// own reports whether rkey, a key List's pattern matched, is where the
// store keeps a blob: the Redis key of a valid blob key. The pattern alone
// matches more: names that are not blob keys (which Delete refuses, so a
// sweep would stop at them every time), and, with KeyTag, other stores'
// tags ("{shop:*}:blob:*" matches store "shop:eu"'s "{shop:eu}:blob:<id>"),
// whose blobs the sweep, finding no record of theirs here, would delete.
func (s *Store) own(rkey string) bool {
	key := s.blobKey(rkey)
	return imagegen.CheckBlobKey(key) == nil && s.rkey(key) == rkey
}

func (s *Store) listBatch(ctx context.Context, c goredis.UniversalClient, keys []string, fn func(imagegen.BlobInfo) error) error {
	keys = slices.DeleteFunc(keys, func(k string) bool { return !s.own(k) })
	if len(keys) == 0 {
		return nil
	}
	heads := make([]*goredis.StringCmd, len(keys))
	lens := make([]*goredis.IntCmd, len(keys))
	_, err := c.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, k := range keys {
			lens[i] = p.StrLen(ctx, k)
			heads[i] = p.GetRange(ctx, k, 0, int64(headerLen)-1)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("redis blobs: list: %w", err)
	}
	for i, k := range keys {
		if lens[i].Val() == 0 {
			continue // deleted since the scan
		}
		info, _ := decodeHeader(s.blobKey(k), heads[i].Val(), lens[i].Val())
		if err := fn(info); err != nil {
			return err
		}
	}
	return nil
}
