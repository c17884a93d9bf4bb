package bench

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/google/uuid"
	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/testenv/redistest"
	redisstore "github.com/imagegen/imagegen/store/redis"
)

var ctx = context.Background()

// redisOptions reads IMAGEGEN_TEST_REDIS or skips.
func redisOptions(b *testing.B) *goredis.Options {
	opt := redistest.Options(b)
	opt.PoolSize = 64
	return opt
}

// newStore returns a store under a fresh prefix, deleted afterwards.
func newStore(b *testing.B, rdb *goredis.Client) *redisstore.Store {
	store, err := redisstore.New(rdb, redisstore.Config{Prefix: "imagegen-bench-" + uuid.NewString()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { redistest.DeleteKeysOf(b, rdb, store) })
	return store
}

// bareCreate is the baseline: the Redis work of the store's submit script
// for one task (id check, balance check and debit, ledger entry, task
// hash, queue, the owner's task index), sent as a bare EVALSHA per submit with precomputed
// arguments: no batching, no Go-side encoding.
const bareCreate = `
local now = tonumber(ARGV[1])
local cost = tonumber(ARGV[6])
if redis.call('EXISTS', KEYS[1]) == 1 then return {-1, 0} end
local balance = tonumber(redis.call('GET', KEYS[2]) or '0')
if balance < cost then return {0, balance} end
redis.call('SET', KEYS[2], balance - cost)
redis.call('RPUSH', KEYS[3], ARGV[7] .. now .. '}')
redis.call('HSET', KEYS[1], 'id', ARGV[2], 'owner', ARGV[3], 'req', ARGV[4], 'model', ARGV[5],
  'cost', cost, 'status', 'pending', 'created', now)
redis.call('ZADD', KEYS[4], now, ARGV[2])
return {1, balance - cost}
`

// taskRequest is the request of every benchmark's imagegen task, and
// benchRequest its JSON, asynq's task payload (River's job carries the
// same fields, riverArgs): the queues compared carry the same request.
// Its JSON is over 64 bytes, as a real prompt makes it: Redis keeps a
// hash with a shorter value as a listpack (hash-max-listpack-value),
// where each field read or written walks the list; with the one-letter
// prompt the pipelines had, a task cost the Redis server 233k
// instructions against 208k (callgrind, RedisPipeline, 3000 tasks).
var taskRequest = imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "a lighthouse at dusk, oil painting", AspectRatio: imagegen.Aspect16x9}

var benchRequest = mustJSON(map[string]any{
	"scene": "text-to-image", "prompt": "a lighthouse at dusk, oil painting", "aspect_ratio": "16:9",
})

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func grantAll(b *testing.B, rdb *goredis.Client, key string) {
	if err := rdb.Set(ctx, key, strconv.Itoa(1<<50), 0).Err(); err != nil {
		b.Fatal(err)
	}
}
