package redis

import (
	"context"
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

// TestBatchIsOneRunOfCallsInTurn: on one server a batch of calls is one
// script run, which answers each call as the calls made one after
// another would: a key twice in the batch counts twice, a key the batch
// filled refuses the next, and a key that is not the limiter's kind (a
// hash under its name) fails its own call only. On miniredis, and on
// the server of IMAGEGEN_TEST_REDIS when it is set.
func TestBatchIsOneRunOfCallsInTurn(t *testing.T) {
	t.Run("miniredis", func(t *testing.T) {
		mr := miniredis.RunT(t)
		mr.SetTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
		rdb := goredis.NewClient(&goredis.Options{Addr: mr.Addr()})
		t.Cleanup(func() { _ = rdb.Close() })
		batchInTurn(t, rdb)
	})
	t.Run("real", func(t *testing.T) {
		rdb, ok := redistest.Connect(t).(*goredis.Client)
		if !ok {
			t.Skip("IMAGEGEN_TEST_REDIS names a Cluster: its batches are a run a call")
		}
		batchInTurn(t, rdb)
	})
}

func batchInTurn(t *testing.T, rdb *goredis.Client) {
	for _, limit := range []int{2, MaxLogLimit + 1} {
		t.Run(map[bool]string{true: "log", false: "set"}[limit <= MaxLogLimit], func(t *testing.T) {
			is := is.New(t)
			lim, err := New(rdb, Config{Limit: limit, Prefix: "imagegen-test:" + uuid.NewString() + ":"})
			is.NoErr(err)
			t.Cleanup(func() { redistest.DeleteKeys(t, rdb, lim.KeyPattern()) })
			ctx := context.Background()
			_, err = lim.Allow(ctx, "b") // loads the script
			is.NoErr(err)
			is.NoErr(rdb.HSet(ctx, lim.redisKey("bad"), "f", "v").Err())
			for range limit - 2 { // a has room for two more
				_, err = lim.Allow(ctx, "a")
				is.NoErr(err)
			}

			keys := []string{"a", "a", "bad", "a", "b"}
			batch := make([]*groupcommit.Call[allowCall, []int64], len(keys))
			for i, k := range keys {
				batch[i] = &groupcommit.Call[allowCall, []int64]{Ctx: ctx, Req: allowCall{key: lim.redisKey(k)}}
			}
			sent := &sentCommands{}
			rdb.AddHook(sent)
			lim.runCalls(ctx, batch)
			is.Equal(sent.names, []string{"evalsha"}) // one script run

			type got struct{ allowed, count int64 }
			answer := func(i int) got {
				is.NoErr(batch[i].Err)
				return got{batch[i].Res[0], batch[i].Res[1]}
			}
			is.Equal(answer(0), got{1, int64(limit - 1)})
			is.Equal(answer(1), got{1, int64(limit)})
			is.True(batch[2].Err != nil && strings.Contains(batch[2].Err.Error(), "WRONGTYPE")) // its own error
			is.Equal(answer(3), got{0, int64(limit)})                                           // full after the two before it
			is.Equal(answer(4), got{1, 2})                                                      // b's second request
			for _, i := range []int{0, 1, 3, 4} {
				is.Equal(batch[i].Res[3], batch[0].Res[3]) // one time for the run
			}
		})
	}
}

// sentCommands is a client hook that notes the commands the client sends.
type sentCommands struct{ names []string }

func (h *sentCommands) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (h *sentCommands) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		h.names = append(h.names, cmd.Name())
		return next(ctx, cmd)
	}
}

func (h *sentCommands) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		for _, c := range cmds {
			h.names = append(h.names, c.Name())
		}
		return next(ctx, cmds)
	}
}
