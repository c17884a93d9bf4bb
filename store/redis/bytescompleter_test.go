package redis_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
	blobmemory "github.com/imagegen/imagegen/blob/memory"
	redisstore "github.com/imagegen/imagegen/store/redis"
)

// A success through CompleteTaskWithBytes keeps the records and the
// bytes together, and concurrent ones share a round trip; one whose
// attempt lost the lease keeps neither; and a store whose Blobs() is
// Config.Blobs declines.
func TestCompleteTaskWithBytes(t *testing.T) {
	ctx := context.Background()
	mr := miniredis.RunT(t)
	rdb := goredis.NewClient(&goredis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	s, err := redisstore.New(rdb, redisstore.Config{Retention: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	c1, c2 := claimTwo(t, s)
	img := func(id, task string, n int) imagegen.Image {
		return imagegen.Image{ID: id, TaskID: task, Owner: "a", ContentType: "image/png", Size: int64(n), Checksum: "x"}
	}
	lost := make(chan error, 1)
	go func() {
		done, err := s.CompleteTaskWithBytes(ctx, c2.ID, c2.Attempt+1, []imagegen.Image{img("img-3", c2.ID, 3)}, [][]byte{[]byte("xyz")}, nil)
		if !done {
			err = errors.New("not done")
		}
		lost <- err
	}()
	done, err := s.CompleteTaskWithBytes(ctx, c1.ID, c1.Attempt, []imagegen.Image{img("img-1", c1.ID, 3), img("img-2", c1.ID, 0)},
		[][]byte{[]byte("abc"), {}}, nil)
	if !done || err != nil {
		t.Fatalf("CompleteTaskWithBytes = %v, %v", done, err)
	}
	for id, want := range map[string]string{"img-1": "abc", "img-2": ""} {
		if _, err := s.Image(ctx, id); err != nil {
			t.Fatalf("record %s: %v", id, err)
		}
		b, err := s.Blobs().Open(ctx, id)
		if err != nil {
			t.Fatalf("bytes of %s: %v", id, err)
		}
		got, err := io.ReadAll(b.Body)
		_ = b.Body.Close()
		if err != nil || string(got) != want {
			t.Fatalf("bytes of %s = %q, %v; want %q", id, got, err, want)
		}
	}
	if task, err := s.Task(ctx, "a", c1.ID); err != nil || task.Status != imagegen.StatusSuccess || len(task.Images) != 2 {
		t.Fatalf("task after its success: %+v, %v", task, err)
	}

	if err := <-lost; !errors.Is(err, imagegen.ErrLeaseLost) {
		t.Fatalf("CompleteTaskWithBytes with a lost lease: %v; want ErrLeaseLost", err)
	}
	if _, err := s.Blobs().Stat(ctx, "img-3"); !errors.Is(err, imagegen.ErrBlobNotFound) {
		t.Fatalf("bytes of a lost lease's image: %v, want ErrBlobNotFound", err)
	}
	if _, err := s.Image(ctx, "img-3"); !errors.Is(err, imagegen.ErrImageNotFound) {
		t.Fatalf("record of a lost lease's image: %v, want ErrImageNotFound", err)
	}
	if task, err := s.Task(ctx, "a", c2.ID); err != nil || task.Status != imagegen.StatusProcessing {
		t.Fatalf("task whose success lost its lease: %+v, %v; want still processing", task, err)
	}

	other, err := redisstore.New(rdb, redisstore.Config{Blobs: blobmemory.New(blobmemory.Config{})})
	if err != nil {
		t.Fatal(err)
	}
	if done, err := other.CompleteTaskWithBytes(ctx, c2.ID, c2.Attempt, nil, nil, nil); done || err != nil {
		t.Fatalf("with Config.Blobs: %v, %v; want not done", done, err)
	}
}

// claimTwo funds owner "a", queues two tasks and claims them.
func claimTwo(t *testing.T, s *redisstore.Store) (*imagegen.Task, *imagegen.Task) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "a", Kind: imagegen.LedgerGrant, Amount: 10, Ref: "grant:a"}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"t1", "t2"} {
		task := &imagegen.Task{ID: id, Owner: "a", Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p"}, Model: "m", Cost: 1}
		if _, err := s.CreateTask(ctx, task, imagegen.CreateParams{}); err != nil {
			t.Fatal(err)
		}
	}
	claimed, err := s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: time.Minute, N: 2})
	if err != nil || len(claimed) != 2 {
		t.Fatalf("claim: %v, %v", claimed, err)
	}
	return claimed[0], claimed[1]
}
