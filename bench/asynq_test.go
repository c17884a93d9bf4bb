package bench

import (
	"testing"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen/internal/testenv/redistest"
)

// asynqOpt puts asynq in the database before imagegen's, so that its own
// bookkeeping keys (servers, workers) are apart and easy to clean up.
func asynqOpt(opt *goredis.Options) asynq.RedisClientOpt {
	return asynq.RedisClientOpt{Addr: opt.Addr, DB: (opt.DB + 15) % 16, PoolSize: opt.PoolSize}
}

// newAsynq returns a client and a fresh queue name; the queue's keys and
// asynq's bookkeeping keys are deleted afterwards.
func newAsynq(b *testing.B, opt *goredis.Options) (*asynq.Client, string) {
	ao := asynqOpt(opt)
	client := asynq.NewClient(ao)
	b.Cleanup(func() { _ = client.Close() })
	queue := "bench-" + uuid.NewString()
	rdb := goredis.NewClient(&goredis.Options{Addr: ao.Addr, DB: ao.DB})
	b.Cleanup(func() {
		redistest.DeleteKeys(b, rdb, "asynq:{"+queue+"}*")
		_ = rdb.SRem(ctx, "asynq:queues", queue).Err()
		_ = rdb.Close()
	})
	return client, queue
}
