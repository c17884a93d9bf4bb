package redis

import (
	"context"
	"errors"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
	blobredis "github.com/imagegen/imagegen/blob/redis"
)

// A success whose bytes did not reach Redis (their SET failed, say) is
// not recorded: completeScript checks the bytes' keys before it records
// anything, says -1, and deletes the bytes that did arrive.
func TestCompleteScriptRecordsNothingWithoutTheBytes(t *testing.T) {
	ctx := context.Background()
	s, rdb := fundedStore(t, 1)
	claimed := claimedTask(t, s)
	w, err := s.ownBlobs.PreparePut("img-1", []byte("abc"))
	if err != nil {
		t.Fatal(err)
	}
	arrived, err := s.ownBlobs.PreparePut("img-2", []byte("def"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rdb.Pipelined(ctx, func(p goredis.Pipeliner) error { arrived.Queue(ctx, p); return nil }); err != nil {
		t.Fatal(err)
	}
	images := []imagegen.Image{{ID: "img-1", Owner: "a", ContentType: "image/png", Size: 3}, {ID: "img-2", Owner: "a", ContentType: "image/png", Size: 3}}
	c, err := s.completeArgs(claimed.ID, claimed.Attempt, images, []blobredis.Write{w, arrived}, nil)
	if err != nil {
		t.Fatal(err)
	}
	keys, args, _ := s.completeRun(s.shards[0], []completeArgs{c})
	res, err := completeScript.Run(ctx, rdb, keys, args...).Int64Slice() // without w's SET
	if err != nil || len(res) != 1 || res[0] != -1 {
		t.Fatalf("completeScript without the bytes = %v, %v; want [-1]", res, err)
	}
	if got, err := s.Task(ctx, "a", claimed.ID); err != nil || got.Status != imagegen.StatusProcessing || len(got.Images) != 0 {
		t.Fatalf("task = %+v, %v; want still processing, no images", got, err)
	}
	for _, id := range []string{"img-1", "img-2"} {
		if _, err := s.Image(ctx, id); err == nil {
			t.Fatalf("image %s has a record", id)
		}
	}
	if n, err := rdb.Exists(ctx, arrived.Key).Result(); err != nil || n != 0 {
		t.Fatalf("the bytes that arrived: exists %d, %v; want deleted", n, err)
	}
}

// A success sent again once recorded (go-redis repeats a pipeline after
// a broken connection) is answered as recorded, and keeps the bytes its
// record points to.
func TestCompleteSentAgainKeepsTheRecordsBytes(t *testing.T) {
	ctx := context.Background()
	s, _ := fundedStore(t, 1)
	claimed := claimedTask(t, s)
	images := []imagegen.Image{{ID: "img-1", Owner: "a", ContentType: "image/png", Size: 3}}
	for i, want := range []error{nil, nil} {
		if _, err := s.CompleteTaskWithBytes(ctx, claimed.ID, claimed.Attempt, images, [][]byte{[]byte("abc")}, nil); !errors.Is(err, want) {
			t.Fatalf("send %d: %v, want %v", i+1, err, want)
		}
	}
	if _, err := s.Blobs().Stat(ctx, "img-1"); err != nil {
		t.Fatalf("the recorded success's bytes: %v", err)
	}
}

// In a run of several successes, each task's bytes are checked on their
// own: the task whose bytes arrived is recorded, the one whose bytes did
// not is not.
func TestCompleteBatchChecksEachTaskWhenSomeBytesAreMissing(t *testing.T) {
	ctx := context.Background()
	s, rdb := fundedStore(t, 2)
	claimed := claimedTasks(t, s, "t1", "t2")
	var run []completeArgs
	for i, c := range claimed {
		imgID := "img-" + c.ID
		w, err := s.ownBlobs.PreparePut(imgID, []byte("abc"))
		if err != nil {
			t.Fatal(err)
		}
		if i == 1 { // only the second task's bytes reach Redis
			if _, err := rdb.Pipelined(ctx, func(p goredis.Pipeliner) error { w.Queue(ctx, p); return nil }); err != nil {
				t.Fatal(err)
			}
		}
		a, err := s.completeArgs(c.ID, c.Attempt, []imagegen.Image{{ID: imgID, Owner: "a", ContentType: "image/png", Size: 3}}, []blobredis.Write{w}, nil)
		if err != nil {
			t.Fatal(err)
		}
		run = append(run, a)
	}
	keys, args, _ := s.completeRun(s.shards[0], run)
	res, err := completeScript.Run(ctx, rdb, keys, args...).Int64Slice()
	if err != nil || len(res) != 2 || res[0] != -1 || res[1] != 1 {
		t.Fatalf("completeScript = %v, %v; want [-1 1]", res, err)
	}
	if got, err := s.Task(ctx, "a", claimed[0].ID); err != nil || got.Status != imagegen.StatusProcessing {
		t.Fatalf("task without its bytes = %+v, %v; want still processing", got, err)
	}
	if got, err := s.Task(ctx, "a", claimed[1].ID); err != nil || got.Status != imagegen.StatusSuccess || len(got.Images) != 1 {
		t.Fatalf("task with its bytes = %+v, %v; want success with its image", got, err)
	}
	if _, err := s.Image(ctx, "img-"+claimed[1].ID); err != nil {
		t.Fatalf("the recorded task's image: %v", err)
	}
}

// A run asks once whether every bytes' key exists; once it has deleted
// the bytes of a success it does not record, the later successes check
// their own keys again: here both name the same key, so the second,
// whose lease holds, finds its bytes gone and is not recorded.
func TestCompleteRunChecksBytesAgainAfterDeletingSome(t *testing.T) {
	ctx := context.Background()
	s, rdb := fundedStore(t, 2)
	claimed := claimedTasks(t, s, "t1", "t2")
	w, err := s.ownBlobs.PreparePut("img-shared", []byte("abc"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rdb.Pipelined(ctx, func(p goredis.Pipeliner) error { w.Queue(ctx, p); return nil }); err != nil {
		t.Fatal(err)
	}
	images := []imagegen.Image{{ID: "img-shared", Owner: "a", ContentType: "image/png", Size: 3}}
	stale, err := s.completeArgs(claimed[0].ID, claimed[0].Attempt+1, images, []blobredis.Write{w}, nil) // holds no lease
	if err != nil {
		t.Fatal(err)
	}
	held, err := s.completeArgs(claimed[1].ID, claimed[1].Attempt, images, []blobredis.Write{w}, nil)
	if err != nil {
		t.Fatal(err)
	}
	keys, args, _ := s.completeRun(s.shards[0], []completeArgs{stale, held})
	res, err := completeScript.Run(ctx, rdb, keys, args...).Int64Slice()
	if err != nil || len(res) != 2 || res[0] != 0 || res[1] != -1 {
		t.Fatalf("completeScript = %v, %v; want [0 -1]", res, err)
	}
	if got, err := s.Task(ctx, "a", claimed[1].ID); err != nil || got.Status != imagegen.StatusProcessing {
		t.Fatalf("task whose bytes the run deleted = %+v, %v; want still processing", got, err)
	}
}
