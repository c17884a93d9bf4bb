package redis

import (
	"context"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen/internal/testenv/redistest"
)

// A finish announced while the watch's subscription is down (its
// connection broken: a Sentinel or Cluster failover, a node restarted,
// a proxy's idle cut) reached no one, and go-redis's PubSub subscribes
// again on a new connection without a word: the watchers waited for an
// announcement that had gone, WaitTask the whole wait (up to a minute)
// for a task long finished. Now a subscription made again wakes every
// watcher (spuriously: they read the task again), as the PostgreSQL
// store does when its listener reconnects.
//
// The test runs on a redis-server of its own (it kills pub/sub clients),
// and ends the subscriber's connection and finishes the task in one
// transaction, so that the announcement goes out before it subscribes
// again.
func TestWatchWokenWhenSubscribedAgain(t *testing.T) {
	ctx := context.Background()
	srv := redistest.StartServer(t, 0)
	rdb := goredis.NewClient(&goredis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	s := fundedStoreOn(t, rdb, "", 1)
	c := claimedTask(t, s)
	finished, stop, err := s.WatchTask(ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	keys, args, _ := s.completeRun(s.shards[0], []completeArgs{mustCompleteArgs(t, s, c.ID, c.Attempt)})
	if err := completeScript.Load(ctx, rdb).Err(); err != nil {
		t.Fatal(err)
	}
	var kill *goredis.Cmd
	if _, err := rdb.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		kill = p.Do(ctx, "CLIENT", "KILL", "TYPE", "pubsub")
		completeScript.EvalSha(ctx, p, keys, args...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n, _ := kill.Int64(); n != 1 {
		t.Fatalf("killed %d pub/sub clients; want the watch's one", n)
	}
	select {
	case <-finished:
	case <-time.After(5 * time.Second):
		t.Fatal("the watch was not woken once its subscription was made again")
	}
}

// mustCompleteArgs is a success of no images.
func mustCompleteArgs(t *testing.T, s *Store, id string, attempt int) completeArgs {
	t.Helper()
	c, err := s.completeArgs(id, attempt, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
