package redis

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
)

// fundedStore returns a store on a fresh miniredis, its client, and
// owner "a" granted credits.
func fundedStore(t *testing.T, credits int64) (*Store, *goredis.Client) {
	t.Helper()
	mr := miniredis.RunT(t)
	rdb := goredis.NewClient(&goredis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	s, err := New(rdb, Config{Retention: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddEntry(context.Background(), imagegen.LedgerEntry{Owner: "a", Kind: imagegen.LedgerGrant, Amount: credits, Ref: "grant:a"}); err != nil {
		t.Fatal(err)
	}
	return s, rdb
}

// claimedTasks submits a task of owner "a" (funded) for each id and
// claims it, in turn.
func claimedTasks(t *testing.T, s *Store, ids ...string) []*imagegen.Task {
	t.Helper()
	var claimed []*imagegen.Task
	for _, id := range ids {
		task := &imagegen.Task{ID: id, Owner: "a", Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p"}, Model: "m", Cost: 1}
		if _, err := s.CreateTask(context.Background(), task, imagegen.CreateParams{}); err != nil {
			t.Fatal(err)
		}
		c, err := s.ClaimTask(context.Background(), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		claimed = append(claimed, c)
	}
	return claimed
}

// claimedTask submits task t1 of owner "a" (funded) and claims it.
func claimedTask(t *testing.T, s *Store) *imagegen.Task {
	t.Helper()
	return claimedTasks(t, s, "t1")[0]
}
