package redis_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/matryer/is"
	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/testenv/redistest"
	redisstore "github.com/imagegen/imagegen/store/redis"
)

// An existing single-node store moves onto a Cluster without losing
// anything: balances, ledgers, API keys, idempotency records, and tasks,
// images and image bytes made before ids carried an owner's mark (found
// by id, listed, downloaded); the same owners then submit and finish on
// the sharded store, which records its number of shards. A store with
// queued tasks is refused. (It runs in TestConformanceCluster, on its
// Cluster.)
func migrateToShards(t *testing.T, dstClient goredis.UniversalClient) {
	is := is.New(t)
	ctx := context.Background()
	single := realRedis(t)
	src := newIsolated(t, single, redisstore.Config{})
	prefix := src.KeyPattern()[1 : len(src.KeyPattern())-3] // "{P}:*" -> P

	type old struct{ owner, task, image string }
	var made []old
	for _, owner := range []string{"alice", "bob", "alice"} {
		_, err := src.AddEntry(ctx, imagegen.LedgerEntry{Owner: owner, Kind: imagegen.LedgerGrant, Amount: 10, Ref: "g-" + uuid.NewString()})
		is.NoErr(err)
		task := &imagegen.Task{ID: uuid.NewString(), Owner: owner, Cost: 2, Model: "m", // an id of before: no owner mark
			Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p"}}
		_, err = src.CreateTask(ctx, task, imagegen.CreateParams{})
		is.NoErr(err)
		made = append(made, old{owner: owner, task: task.ID, image: uuid.NewString()})
	}
	key := imagegen.APIKey{ID: "key_1", Owner: "alice", Hash: imagegen.HashAPIKey("alice-key-0123456789"), Hint: "alic…", CreatedAt: time.Now()}
	is.NoErr(src.PutKey(ctx, key))
	_, err := src.BeginIdempotent(ctx, "alice", "idem-1", "fp", "", time.Minute, time.Hour)
	is.NoErr(err)
	is.NoErr(src.FinishIdempotent(ctx, "alice", "idem-1", "fp", 201, []byte(`{"task_id":"x"}`), time.Hour))

	dst, err := redisstore.New(dstClient, redisstore.Config{Prefix: prefix})
	is.NoErr(err)
	_, err = redisstore.MigrateToShards(ctx, single, dst)
	is.True(errors.Is(err, redisstore.ErrQueueNotEmpty)) // three pending tasks

	for range made {
		c, err := src.ClaimTask(ctx, time.Minute)
		is.NoErr(err)
		var imageID string
		for _, m := range made {
			if m.task == c.ID {
				imageID = m.image
			}
		}
		is.NoErr(src.Blobs().Put(ctx, imageID, bytes.NewReader([]byte("png of "+c.ID)), int64(len("png of "+c.ID)), "image/png"))
		is.NoErr(src.CompleteTask(ctx, c.ID, c.Attempt, []imagegen.Image{{ID: imageID, TaskID: c.ID, Owner: c.Owner, ContentType: "image/png", Size: int64(len("png of " + c.ID))}}, nil))
	}
	wantBalance := map[string]int64{}
	wantLedger := map[string]int{}
	for _, owner := range []string{"alice", "bob"} {
		wantBalance[owner], err = src.Balance(ctx, owner)
		is.NoErr(err)
		l, err := src.Ledger(ctx, owner)
		is.NoErr(err)
		wantLedger[owner] = len(l)
	}

	moved, err := redisstore.MigrateToShards(ctx, single, dst)
	is.NoErr(err)
	t.Logf("moved %+v", moved)
	t.Cleanup(func() { redistest.DeleteKeysOf(t, dstClient, dst) })

	// The destination records its number of shards: it checks out, and a
	// process of one shard on the Cluster (the copied store's) is refused.
	is.NoErr(dst.CheckLayout(ctx))
	one, err := redisstore.New(dstClient, redisstore.Config{Prefix: prefix, Shards: 1})
	is.NoErr(err)
	is.True(errors.Is(one.Ping(ctx), redisstore.ErrLayoutMismatch))

	for owner, want := range wantBalance {
		got, err := dst.Balance(ctx, owner)
		is.NoErr(err)
		is.Equal(got, want)
		l, err := dst.Ledger(ctx, owner)
		is.NoErr(err)
		is.Equal(len(l), wantLedger[owner])
	}
	for _, m := range made {
		task, err := dst.Task(ctx, m.owner, m.task)
		is.NoErr(err)
		is.Equal(task.Status, imagegen.StatusSuccess)
		is.Equal(task.Images, []string{m.image})
		_, err = dst.TaskByID(ctx, m.task)
		is.NoErr(err)
		_, err = dst.Image(ctx, m.image)
		is.NoErr(err)
		b, err := dst.Blobs().Open(ctx, m.image)
		is.NoErr(err)
		body, err := io.ReadAll(b.Body)
		is.NoErr(err)
		is.Equal(string(body), "png of "+m.task)
	}
	page, err := dst.ListTasks(ctx, "alice", "", 10, "")
	is.NoErr(err)
	is.Equal(len(page.Tasks), 2)
	all, err := dst.ListAllTasks(ctx, imagegen.TaskFilter{}, 10, "")
	is.NoErr(err)
	is.Equal(len(all.Tasks), 3)
	got, err := dst.KeyByHash(ctx, key.Hash)
	is.NoErr(err)
	is.Equal(got.Owner, "alice")
	listed, err := dst.Keys(ctx, "alice")
	is.NoErr(err)
	is.Equal(len(listed), 1) // the owner's list, moved to its shard
	rec, err := dst.BeginIdempotent(ctx, "alice", "idem-1", "fp", "", time.Minute, time.Hour)
	is.NoErr(err)
	is.True(rec != nil && rec.Done) // the stored response, replayed

	// The same owner goes on, on the sharded store.
	task := &imagegen.Task{ID: imagegen.NewOwnedID("alice"), Owner: "alice", Cost: 2, Model: "m",
		Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p"}}
	balance, err := dst.CreateTask(ctx, task, imagegen.CreateParams{})
	is.NoErr(err)
	is.Equal(balance, wantBalance["alice"]-2)
	c, err := dst.ClaimTask(ctx, time.Minute)
	is.NoErr(err)
	is.Equal(c.ID, task.ID)
	is.NoErr(dst.CompleteTask(ctx, c.ID, c.Attempt, []imagegen.Image{{ID: imagegen.NewOwnedID("alice"), TaskID: c.ID, Owner: "alice", ContentType: "image/png", Size: 1}}, nil))
}
