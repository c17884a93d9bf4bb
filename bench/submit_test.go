package bench

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/testenv/redistest"
)

// parallelism is goroutines per CPU in the submit benchmarks: enough
// concurrent clients to keep Redis busy on loopback.
const parallelism = 16

// BenchmarkRedisSubmit compares one submit (debit + task + queue) through
// the Redis store with a bare EVALSHA of an equivalent script and with
// asynq's Client.Enqueue, all on the same server. The store and asynq
// report the server's CPU time a submit too (rediscpu-µs/op, when the
// server runs on this machine).
func BenchmarkRedisSubmit(b *testing.B) {
	opt := redisOptions(b)

	b.Run("store", func(b *testing.B) {
		store := newStore(b, redistest.NewClient(b, opt))
		report := redisCPU(b, opt).start()
		submitTasks(b, store)
		b.StopTimer()
		report()
	})

	b.Run("evalsha", func(b *testing.B) {
		rdb, prefix, sha := fundedScript(b, opt, bareCreate)
		timeParallel(b, func() error {
			id := uuid.NewString()
			keys := []string{prefix + ":task:" + id, prefix + ":balance:bench", prefix + ":ledger:bench", prefix + ":pending", prefix + ":tasks:bench"}
			entry := `{"kind":"charge","amount":-1,"ref":"task:` + id + `","at":`
			return rdb.EvalSha(ctx, sha, keys, "1767312245000", id, "bench", benchRequest, "placeholder", 1, entry).Err()
		})
	})

	b.Run("asynq", func(b *testing.B) {
		client, queue := newAsynq(b, opt)
		report := redisCPU(b, opt).start()
		timeParallel(b, func() error {
			_, err := client.Enqueue(asynq.NewTask("generate", benchRequest), asynq.Queue(queue))
			return err
		})
		b.StopTimer()
		report()
	})

	// asynq-charged is what a credits service built on asynq has to do
	// at least: charge the submit (balance check, debit and ledger entry,
	// one script run: chargeScript) and then enqueue it, two round trips
	// that are not even atomic together. The store does that and more
	// (the fair-share queue, the owner's and the operators' indexes) in
	// one; this is the like-for-like anchor beside asynq's bare Enqueue.
	b.Run("asynq-charged", func(b *testing.B) {
		client, queue := newAsynq(b, opt)
		rdb, prefix, sha := fundedScript(b, opt, chargeScript)
		keys := []string{prefix + ":balance:bench", prefix + ":ledger:bench"}
		report := redisCPU(b, opt).start()
		timeParallel(b, func() error {
			entry := `{"kind":"charge","amount":-1,"ref":"task:` + uuid.NewString() + `","at":1767312245000}`
			left, err := rdb.EvalSha(ctx, sha, keys, 1, entry).Int64()
			switch {
			case err != nil:
				return err
			case left < 0:
				return errors.New("balance short")
			}
			_, err = client.Enqueue(asynq.NewTask("generate", benchRequest), asynq.Queue(queue))
			return err
		})
		b.StopTimer()
		report()
	})
}

// fundedScript is a client, a fresh key prefix (a hash tag, its keys
// deleted afterwards) whose owner "bench" has a large balance, and
// script loaded: the setup of the bare script runs beside the store.
func fundedScript(b *testing.B, opt *goredis.Options, script string) (rdb *goredis.Client, prefix, sha string) {
	rdb = redistest.NewClient(b, opt)
	prefix = "{imagegen-bench-" + uuid.NewString() + "}"
	b.Cleanup(func() { redistest.DeleteKeys(b, rdb, prefix+":*") })
	sha, err := rdb.ScriptLoad(ctx, script).Result()
	if err != nil {
		b.Fatal(err)
	}
	grantAll(b, rdb, prefix+":balance:bench")
	return rdb, prefix, sha
}

// chargeScript charges one submit: -1 when the balance (KEYS[1]) is
// short of the cost (ARGV[1]), else it debits it, appends the ledger
// entry (ARGV[2]) to KEYS[2] and returns the balance left.
const chargeScript = `
if tonumber(redis.call('GET', KEYS[1]) or '0') < tonumber(ARGV[1]) then return -1 end
local left = redis.call('DECRBY', KEYS[1], ARGV[1])
redis.call('RPUSH', KEYS[2], ARGV[2])
return left
`

// submitTasks times CreateTask of one-credit tasks for one owner on
// store, from 16 goroutines per CPU, with no pending cap.
func submitTasks(b *testing.B, store imagegen.Store) {
	submitTasksCapped(b, store, imagegen.CreateParams{})
}

// submitTasksCapped is submitTasks with p (a pending cap): once the
// owner's queue is full, the rest are refusals (ErrQueueFull), which
// debit, check the cap and refund like any full owner's submit; their
// share is reported as refused/op.
func submitTasksCapped(b *testing.B, store imagegen.Store, p imagegen.CreateParams) {
	if _, err := store.AddEntry(ctx, imagegen.LedgerEntry{Owner: "bench", Kind: imagegen.LedgerGrant, Amount: 1 << 50, Ref: "grant:bench"}); err != nil {
		b.Fatal(err)
	}
	var refused atomic.Int64
	timeParallel(b, func() error {
		t := &imagegen.Task{ID: uuid.NewString(), Owner: "bench", Request: taskRequest, Model: "placeholder", Cost: 1}
		_, err := store.CreateTask(ctx, t, p)
		if errors.Is(err, imagegen.ErrQueueFull) {
			refused.Add(1)
			return nil
		}
		return err
	})
	if p.MaxPending > 0 {
		b.ReportMetric(float64(refused.Load())/float64(b.N), "refused/op")
	}
}

// timeParallel times b.N calls of op from parallelism goroutines a CPU
// (the submit benchmarks' concurrent clients), reporting allocations; a
// call that fails fails the benchmark.
func timeParallel(b *testing.B, op func() error) {
	b.ReportAllocs()
	b.SetParallelism(parallelism)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := op(); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
