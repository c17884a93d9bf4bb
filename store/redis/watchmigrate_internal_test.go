package redis

import (
	"context"
	"net"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/testenv/redistest"
)

// A Cluster's master that gives a slot away (a resharding: CLUSTER
// SETSLOT … NODE) drops its sharded subscriptions to the slot's
// channels, telling each subscriber with an "sunsubscribe" on a
// connection that stays open; go-redis does not subscribe again. The
// watcher woke its watchers once and kept the dead subscription, so
// every watch of the shard's tasks made after it (a worker's for its
// owner's cancel, WaitTask's of every later request) was never woken
// by a finish, for as long as anyone watched the shard. A subscription
// the server ends is now made anew, on the slot's new master.
func TestWatchFollowsAMigratedSlot(t *testing.T) {
	ctx := context.Background()
	c := redistest.StartCluster(t, 3)
	rdb := c.Client(t)
	s, err := New(rdb, Config{Retention: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "a", Kind: imagegen.LedgerGrant, Amount: 1, Ref: "g"}); err != nil {
		t.Fatal(err)
	}
	id := imagegen.NewOwnedID("a")
	if _, err := s.CreateTask(ctx, &imagegen.Task{ID: id, Owner: "a", Cost: 1, Model: "m",
		Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p"}}, imagegen.CreateParams{}); err != nil {
		t.Fatal(err)
	}
	claim, err := s.ClaimTask(ctx, time.Minute)
	if err != nil || claim == nil || claim.ID != id {
		t.Fatalf("claimed %v, %v; want %s", claim, err, id)
	}
	// The first watch keeps the subscription open throughout, as a
	// worker running another task of the shard does.
	first, stopFirst, err := s.WatchTask(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	defer stopFirst()

	moveSlot(t, c, rdb, s.byID(id).finished())
	select {
	case <-first: // the server's sunsubscribe wakes it (spuriously)
	case <-time.After(10 * time.Second):
		t.Fatal("the watch was not woken when its slot moved")
	}

	watch, stop, err := s.WatchTask(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if err := s.CompleteTask(ctx, id, claim.Attempt, nil, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-watch:
	case <-time.After(10 * time.Second):
		t.Fatal("a watch made after the slot moved was not woken by the task's finish")
	}
}

// moveSlot moves the slot of key, and its keys, from its master to
// another master, as redis-cli --cluster reshard does.
func moveSlot(t *testing.T, c *redistest.Cluster, rdb *goredis.ClusterClient, key string) {
	t.Helper()
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	owner, err := rdb.MasterForKey(ctx, key)
	must(err)
	slot, err := rdb.ClusterKeySlot(ctx, key).Result()
	must(err)
	var src, dst *goredis.Client
	for _, m := range c.Masters(t) {
		cl := goredis.NewClient(&goredis.Options{Addr: m.Addr()})
		t.Cleanup(func() { _ = cl.Close() })
		if m.Addr() == owner.Options().Addr {
			src = cl
		} else if dst == nil {
			dst = cl
		}
	}
	if src == nil || dst == nil {
		t.Fatal("no source or destination master for the slot")
	}
	srcID, err := src.Do(ctx, "CLUSTER", "MYID").Text()
	must(err)
	dstID, err := dst.Do(ctx, "CLUSTER", "MYID").Text()
	must(err)
	must(dst.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", srcID).Err())
	must(src.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", dstID).Err())
	host, port, err := net.SplitHostPort(dst.Options().Addr)
	must(err)
	for {
		keys, err := src.Do(ctx, "CLUSTER", "GETKEYSINSLOT", slot, 100).StringSlice()
		must(err)
		if len(keys) == 0 {
			break
		}
		args := []any{"MIGRATE", host, port, "", 0, 5000, "KEYS"}
		for _, k := range keys {
			args = append(args, k)
		}
		must(src.Do(ctx, args...).Err())
	}
	must(dst.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", dstID).Err())
	must(src.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", dstID).Err())
}

// A write that waits for replicas (Config.WaitReplicas) goes straight
// to the master of its slot in the client's map; when that node answers
// MOVED (a resharding moved the slot), acked reloaded the map and tried
// once more at once, but go-redis reloads it in the background, so the
// second try went to the same node, and the write (a submit, a grant, a
// finish) failed with the MOVED answer. Now acked waits, boundedly, for
// the map to name the node MOVED named.
func TestAckedFollowsAMigratedSlot(t *testing.T) {
	ctx := context.Background()
	c := redistest.StartCluster(t, 3)
	rdb := c.Client(t)
	s, err := New(rdb, Config{Retention: time.Hour, WaitReplicas: 1})
	if err != nil {
		t.Fatal(err)
	}
	grant := func(ref string) error {
		_, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "a", Kind: imagegen.LedgerGrant, Amount: 1, Ref: ref})
		return err
	}
	if err := grant("g1"); err != nil {
		t.Fatal(err)
	}
	moveSlot(t, c, rdb, s.byOwner("a").balance("a"))
	if err := grant("g2"); err != nil {
		t.Fatalf("a grant after the owner's slot moved: %v", err)
	}
}
