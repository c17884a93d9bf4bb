package redis

import (
	"context"
	"math/rand"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/google/uuid"
	"github.com/matryer/is"
	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen/internal/groupcommit"
	"github.com/imagegen/imagegen/internal/testenv/redistest"
)

// servers runs test on miniredis, and on the server of
// IMAGEGEN_TEST_REDIS when it is set (and is not a Cluster's).
func servers(t *testing.T, test func(t *testing.T, rdb *goredis.Client)) {
	t.Run("miniredis", func(t *testing.T) {
		mr := miniredis.RunT(t)
		mr.SetTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
		rdb := goredis.NewClient(&goredis.Options{Addr: mr.Addr()})
		t.Cleanup(func() { _ = rdb.Close() })
		test(t, rdb)
	})
	t.Run("real", func(t *testing.T) {
		rdb, ok := redistest.Connect(t).(*goredis.Client)
		if !ok {
			t.Skip("IMAGEGEN_TEST_REDIS names a Cluster: its batches are a run a call")
		}
		test(t, rdb)
	})
}

// newTestLimiter is a limiter on rdb under a prefix of its own, whose
// keys are deleted when the test ends.
func newTestLimiter(t *testing.T, rdb *goredis.Client, cfg Config) *Limiter {
	t.Helper()
	cfg.Prefix = "imagegen-test:" + uuid.NewString() + ":"
	lim, err := New(rdb, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { redistest.DeleteKeys(t, rdb, lim.KeyPattern()) })
	return lim
}

// batchOf is a batch of calls of lim for keys, at the times given (µs;
// none: the server's clock).
func batchOf(lim *Limiter, keys []string, times ...int64) []*groupcommit.Call[allowCall, []int64] {
	batch := make([]*groupcommit.Call[allowCall, []int64], len(keys))
	for i, k := range keys {
		c := allowCall{key: lim.redisKey(k)}
		if times != nil {
			c.now = strconv.FormatInt(times[i], 10)
		}
		batch[i] = &groupcommit.Call[allowCall, []int64]{Ctx: context.Background(), Req: c}
	}
	return batch
}

// kinds are the limits of the two kinds of key: a log, a sorted set.
var kinds = []struct {
	name  string
	limit int
}{{"log", 2}, {"set", MaxLogLimit + 1}}

// TestBatchIsOneRunOfCallsInTurn: on one server a batch of calls is one
// script run, which answers each call as the calls made one after
// another would: a key twice in the batch counts twice, a key the batch
// filled refuses the next, and a key whose value is not the limiter's
// (a hash under its name; for a log, a string that is not one) fails
// its own call only, with the error Redis gave.
func TestBatchIsOneRunOfCallsInTurn(t *testing.T) {
	servers(t, func(t *testing.T, rdb *goredis.Client) {
		for _, kind := range kinds {
			t.Run(kind.name, func(t *testing.T) {
				is := is.New(t)
				limit := kind.limit
				lim := newTestLimiter(t, rdb, Config{Limit: limit})
				ctx := context.Background()
				_, err := lim.Allow(ctx, "b") // loads the script
				is.NoErr(err)
				is.NoErr(rdb.HSet(ctx, lim.redisKey("hash"), "f", "v").Err())
				is.NoErr(rdb.Set(ctx, lim.redisKey("junk"), "not a log of times", 0).Err())
				for range limit - 2 { // a has room for two more
					_, err = lim.Allow(ctx, "a")
					is.NoErr(err)
				}

				batch := batchOf(lim, []string{"a", "hash", "a", "junk", "a", "b"})
				sent := &sentCommands{}
				rdb.AddHook(sent.hook())
				lim.runCalls(ctx, batch)
				is.Equal(sent.names, []string{"evalsha"}) // one script run

				type got struct{ allowed, count int64 }
				answer := func(i int) got {
					is.NoErr(batch[i].Err)
					return got{batch[i].Res[0], batch[i].Res[1]}
				}
				is.Equal(answer(0), got{1, int64(limit - 1)})
				is.True(goredis.HasErrorPrefix(batch[1].Err, "WRONGTYPE")) // its own error, as Redis's
				is.Equal(answer(2), got{1, int64(limit)})
				is.True(batch[3].Err != nil)              // not a log (a log kind) or a string (a set kind)
				is.Equal(answer(4), got{0, int64(limit)}) // full after the two before it
				is.Equal(answer(5), got{1, 2})            // b's second request
				for _, i := range []int{0, 2, 4, 5} {
					is.Equal(batch[i].Res[3], batch[0].Res[3]) // one time for the run
				}
			})
		}
	})
}

// TestBatchAnswersAsCallsOneByOne: batches of calls with times of their
// own (Config.Now), out of order and on keys that repeat, answer as the
// same calls made one at a time on another limiter.
func TestBatchAnswersAsCallsOneByOne(t *testing.T) {
	servers(t, func(t *testing.T, rdb *goredis.Client) {
		for _, kind := range kinds {
			t.Run(kind.name, func(t *testing.T) {
				is := is.New(t)
				cfg := Config{Limit: kind.limit + 1, Window: time.Second}
				together, alone := newTestLimiter(t, rdb, cfg), newTestLimiter(t, rdb, cfg)
				rng := rand.New(rand.NewSource(1))
				now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixMicro()
				for range 200 {
					n := 1 + rng.Intn(8)
					keys, times := make([]string, n), make([]int64, n)
					for i := range n {
						keys[i] = []string{"x", "y", "z"}[rng.Intn(3)]
						now += int64(rng.Intn(300_000)) - 50_000 // on, and now and then back
						times[i] = now
					}
					batch := batchOf(together, keys, times...)
					together.runCalls(context.Background(), batch)
					for i := range n {
						one := batchOf(alone, keys[i:i+1], times[i])
						alone.runCalls(context.Background(), one)
						is.NoErr(batch[i].Err)
						is.NoErr(one[0].Err)
						is.Equal(batch[i].Res, one[0].Res) // allowed, count, free, now
					}
				}
			})
		}
	})
}

// TestBatchApart: with Config.OneKeyPerScript, and once a server has
// refused a batch's run with CROSSSLOT (a proxy in front of several
// servers), each call of a batch is a script run of its own; the
// refused batch is answered all the same.
func TestBatchApart(t *testing.T) {
	servers(t, func(t *testing.T, rdb *goredis.Client) {
		t.Run("OneKeyPerScript", func(t *testing.T) {
			is := is.New(t)
			lim := newTestLimiter(t, rdb, Config{OneKeyPerScript: true})
			_, err := lim.Allow(context.Background(), "a") // loads the script
			is.NoErr(err)
			sent := &sentCommands{}
			rdb.AddHook(sent.hook())
			batch := batchOf(lim, []string{"a", "b", "a"})
			lim.runCalls(context.Background(), batch)
			is.Equal(sent.names, []string{"evalsha", "evalsha", "evalsha"})
			is.Equal(counts(t, batch), []int64{2, 1, 3})
		})
		t.Run("CROSSSLOT", func(t *testing.T) {
			is := is.New(t)
			lim := newTestLimiter(t, rdb, Config{})
			_, err := lim.Allow(context.Background(), "a") // loads the script
			is.NoErr(err)
			proxy := &sentCommands{refuseKeys: 2}
			rdb.AddHook(proxy.hook())
			batch := batchOf(lim, []string{"a", "b", "a"})
			lim.runCalls(context.Background(), batch)
			is.Equal(proxy.names, []string{"evalsha", "evalsha", "evalsha", "evalsha"}) // refused, then one a call
			is.Equal(counts(t, batch), []int64{2, 1, 3})
			proxy.names = nil
			batch = batchOf(lim, []string{"b", "c"})
			lim.runCalls(context.Background(), batch)
			is.Equal(proxy.names, []string{"evalsha", "evalsha"}) // apart from then on
			is.Equal(counts(t, batch), []int64{2, 1})
		})
	})
}

// counts are the counts a batch's calls answered.
func counts(t *testing.T, batch []*groupcommit.Call[allowCall, []int64]) []int64 {
	t.Helper()
	var out []int64
	for _, c := range batch {
		if c.Err != nil {
			t.Fatal(c.Err)
		}
		out = append(out, c.Res[1])
	}
	return out
}

// sentCommands notes the script runs a client sends (its hook); with
// refuseKeys set, it answers a script run of that many keys or more
// with CROSSSLOT, as a proxy in front of several servers does, without
// sending it.
type sentCommands struct {
	names      []string
	refuseKeys int
}

// hook is the client hook that feeds h.
func (h *sentCommands) hook() redistest.Hook {
	return redistest.Hook{Before: func(cmd goredis.Cmder) error {
		h.note(cmd)
		if h.refused(cmd) {
			return crossSlot{}
		}
		return nil
	}}
}

// note notes cmd if it is a script run (a new connection's own
// commands are not the limiter's).
func (h *sentCommands) note(cmd goredis.Cmder) {
	if strings.HasPrefix(cmd.Name(), "eval") {
		h.names = append(h.names, cmd.Name())
	}
}

// refused is whether cmd is a script run of refuseKeys keys or more.
func (h *sentCommands) refused(cmd goredis.Cmder) bool {
	args := cmd.Args() // evalsha, sha, numkeys, keys...
	if h.refuseKeys == 0 || cmd.Name() != "evalsha" || len(args) < 3 {
		return false
	}
	n, _ := args[2].(int)
	return n >= h.refuseKeys
}

// crossSlot is the error a proxy gives a run of keys on several servers.
type crossSlot struct{}

func (crossSlot) Error() string { return "CROSSSLOT Keys in request don't hash to the same slot" }
func (crossSlot) RedisError()   {}
