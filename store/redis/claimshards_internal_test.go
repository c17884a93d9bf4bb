package redis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/google/uuid"
	"github.com/matryer/is"
	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/testenv/redistest"
)

// twoShards is a store of two shards on one server, the shard the next
// claim asks first and the one it asks second, and the store's client.
type twoShards struct {
	s             *Store
	first, second keys
	rdb           *goredis.Client
}

// onTwoShards runs test on a store of two shards (Config.Shards 2) on
// miniredis and, when IMAGEGEN_TEST_REDIS is set, on that server under a
// prefix of its own, deleted afterwards. The store's client reaches the
// server at the address via(t, server's address) returns (a proxy, or
// the server itself), and does not send a command again
// (MaxRetries -1): as go-redis once its own sends again are used up.
func onTwoShards(t *testing.T, via func(t *testing.T, addr string) string, test func(t *testing.T, ts twoShards)) {
	t.Run("miniredis", func(t *testing.T) {
		mr := miniredis.RunT(t)
		test(t, newTwoShards(t, &goredis.Options{Addr: mr.Addr()}, via, ""))
	})
	t.Run("redis", func(t *testing.T) {
		opt := redistest.Options(t)
		ts := newTwoShards(t, opt, via, "imagegen-test-"+uuid.NewString())
		direct := redistest.NewClient(t, redistest.Options(t))
		t.Cleanup(func() { redistest.DeleteKeysOf(t, direct, ts.s) })
		test(t, ts)
	})
}

func newTwoShards(t *testing.T, opt *goredis.Options, via func(t *testing.T, addr string) string, prefix string) twoShards {
	t.Helper()
	o := *opt
	o.Addr, o.MaxRetries = via(t, opt.Addr), -1
	rdb := redistest.NewClient(t, &o)
	s, err := New(rdb, Config{Retention: time.Hour, Prefix: prefix, Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	start := int(s.next.Load()) + 1 // as the next ClaimTasks starts (0: a new store's)
	return twoShards{s: s, first: s.shards[start%2], second: s.shards[(start+1)%2], rdb: rdb}
}

// submit grants an owner of shard sh credits and submits n tasks for
// it; it returns their ids.
func (ts twoShards) submit(t *testing.T, sh keys, n int) []string {
	t.Helper()
	ctx := context.Background()
	owner := ""
	for i := 0; owner == ""; i++ {
		if o := fmt.Sprintf("owner-%d", i); ts.s.byOwner(o) == sh {
			owner = o
		}
	}
	if _, err := ts.s.AddEntry(ctx, imagegen.LedgerEntry{Owner: owner, Kind: imagegen.LedgerGrant, Amount: int64(n), Ref: "g"}); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for range n {
		task := &imagegen.Task{ID: imagegen.NewOwnedID(owner), Owner: owner, Cost: 1, Model: "m",
			Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p"}}
		if _, err := ts.s.CreateTask(ctx, task, imagegen.CreateParams{}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, task.ID)
	}
	return ids
}

func idsOf(tasks []*imagegen.Task) []string {
	var ids []string
	for _, t := range tasks {
		ids = append(ids, t.ID)
	}
	slices.Sort(ids)
	return ids
}

// A claim whose reply from the second shard it asked was lost, after
// go-redis's own sends again (here none), used to end with the first
// shard's tasks and no error: the second shard's script had leased its
// tasks, which stayed processing with no worker until their leases ran
// out, an attempt used up. The store now asks that shard again with the
// same token, marked as sent again, and the run answers with the tasks
// its first run leased.
func TestClaimAcrossShardsAsksAgainAfterALostReply(t *testing.T) {
	var p *redistest.ReplyDropper
	dropper := func(t *testing.T, addr string) string {
		p = redistest.StartReplyDropper(t, addr)
		return p.Addr
	}
	onTwoShards(t, dropper, func(t *testing.T, ts twoShards) {
		is := is.New(t)
		ctx := context.Background()
		want := append(ts.submit(t, ts.first, 1), ts.submit(t, ts.second, 2)...)
		slices.Sort(want)
		p.Arm(ts.second.tag) // the second shard's claim: its keys hold its tag
		got, err := ts.s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: time.Hour, N: 3})
		is.Equal(p.Dropped(), 1) // the second shard's reply was lost
		is.NoErr(err)
		is.Equal(idsOf(got), want) // every task leased, the second shard's too
		for _, c := range got {
			is.Equal(c.Attempt, 1) // leased once: not claimed again
		}
		_, err = ts.s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: time.Hour, N: 3})
		is.True(errors.Is(err, imagegen.ErrNoTask)) // none left pending
	})
}

// countClaimsOn is a hook that counts the claim scripts sent to shard sh
// and answers each with *fail instead of sending it (nil: sent).
func countClaimsOn(sh keys, fail *error, asked *atomic.Int32) redistest.Hook {
	return redistest.Hook{Before: func(cmd goredis.Cmder) error {
		name := strings.ToLower(cmd.Name())
		if (name == "evalsha" || name == "eval") && slices.Contains(cmd.Args(), any(sh.fair())) {
			asked.Add(1)
			return *fail
		}
		return nil
	}}
}

// A claim whose second shard fails for good after the first gave tasks
// used to return those tasks with no error: the failure was dropped,
// unseen. The tasks now come with an *imagegen.PartialClaimError naming
// the shard and wrapping its error, after a bounded number of asks
// again when the error leaves unknown whether the script ran (a
// connection's), and one ask when Redis answered (a script's error: a
// key of the wrong kind).
func TestClaimAcrossShardsReturnsALaterShardsErrorWithTheTasks(t *testing.T) {
	direct := func(_ *testing.T, addr string) string { return addr }
	onTwoShards(t, direct, func(t *testing.T, ts twoShards) {
		ctx := context.Background()
		want := ts.submit(t, ts.first, 1)
		ts.submit(t, ts.second, 1)
		var fail error
		var asked atomic.Int32
		ts.rdb.AddHook(countClaimsOn(ts.second, &fail, &asked))
		check := func(t *testing.T, wantAsked int32, wantErr func(error) bool) {
			t.Helper()
			is := is.New(t)
			asked.Store(0)
			got, err := ts.s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: time.Hour, N: 2})
			is.Equal(idsOf(got), want) // the first shard's task, returned
			var partial *imagegen.PartialClaimError
			is.True(errors.As(err, &partial)) // with the second shard's error
			is.True(errors.Is(err, imagegen.ErrPartialClaim))
			is.True(strings.Contains(partial.Part, ts.second.tag))
			is.True(wantErr(err))
			is.Equal(asked.Load(), wantAsked)
			for _, c := range got { // given back for the next case
				is.NoErr(ts.s.ReleaseTask(ctx, c.ID, c.Attempt))
			}
			ts.s.next.Store(0) // the next claim asks the shards in the same order
		}
		t.Run("connection", func(t *testing.T) {
			fail = io.ErrUnexpectedEOF
			check(t, 1+claimAsksAgain, func(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) })
		})
		t.Run("script", func(t *testing.T) {
			fail = nil
			spoil(t, ts.s, ts.second.leases()) // the second shard's claim fails in Redis
			check(t, 1, func(err error) bool { var answer goredis.Error; return errors.As(err, &answer) })
		})
	})
}

// A ClaimTask whose first shard leased it a task it could not read,
// then whose second shard leased it one, used to return the error
// alone: the task it had leased was dropped, leased to no one until its
// lease ran out. It is now returned with the error.
func TestClaimTaskAcrossShardsReturnsItsTaskWithAnUnreadableOne(t *testing.T) {
	direct := func(_ *testing.T, addr string) string { return addr }
	onTwoShards(t, direct, func(t *testing.T, ts twoShards) {
		is := is.New(t)
		ctx := context.Background()
		bad := ts.submit(t, ts.first, 1)[0]
		good := ts.submit(t, ts.second, 1)[0]
		is.NoErr(ts.rdb.HSet(ctx, ts.first.task(bad), "req", "{not json").Err()) // corrupted in Redis
		got, err := ts.s.ClaimTask(ctx, time.Hour)
		is.True(errors.Is(err, imagegen.ErrUnreadableTask))
		is.True(got != nil) // the second shard's task, returned
		is.Equal(got.ID, good)
	})
}
