package postgres_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/testenv/pgtest"
	"github.com/imagegen/imagegen/store/postgres"
)

// A success through CompleteTaskWithBytes keeps the records and the
// bytes together; one whose attempt lost the lease keeps neither; and a
// store whose Blobs() is Config.Blobs declines.
func TestCompleteTaskWithBytes(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Connect(t)
	s := pgtest.NewStore(t, pool, postgres.Config{})
	if _, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "a", Kind: imagegen.LedgerGrant, Amount: 10, Ref: "grant:a"}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"t1", "t2"} {
		if _, err := s.CreateTask(ctx, &imagegen.Task{ID: id, Owner: "a", Request: prompt, Model: "m", Cost: 1}, imagegen.CreateParams{}); err != nil {
			t.Fatal(err)
		}
	}
	c1, err := s.ClaimTask(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := s.ClaimTask(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	img := func(id, task string, n int) imagegen.Image {
		return imagegen.Image{ID: id, TaskID: task, Owner: "a", ContentType: "image/png", Size: int64(n), Checksum: "x"}
	}
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
	done, err = s.CompleteTaskWithBytes(ctx, c2.ID, c2.Attempt+1, []imagegen.Image{img("img-3", c2.ID, 3)}, [][]byte{[]byte("xyz")}, nil)
	if !done || !errors.Is(err, imagegen.ErrLeaseLost) {
		t.Fatalf("CompleteTaskWithBytes with a lost lease = %v, %v; want ErrLeaseLost", done, err)
	}
	if _, err := s.Blobs().Stat(ctx, "img-3"); !errors.Is(err, imagegen.ErrBlobNotFound) {
		t.Fatalf("bytes of a lost lease's image: %v, want ErrBlobNotFound", err)
	}

	other := pgtest.NewStore(t, pool, postgres.Config{Blobs: s.Blobs()})
	if done, err := other.CompleteTaskWithBytes(ctx, c2.ID, c2.Attempt, nil, nil, nil); done || err != nil {
		t.Fatalf("with Config.Blobs: %v, %v; want not done", done, err)
	}
}
