package redis_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv/apitest"
	redisstore "github.com/imagegen/imagegen/store/redis"
)

// FuzzCursors gives any cursor to the Redis store's three cursor-paged
// lists (ListTasks, ListAllTasks, ListLedger) on miniredis, with tasks
// and ledger entries to page through, as memory's FuzzCursors does: none
// panics, a cursor it refuses is refused with an error that wraps
// imagegen.ErrInvalidParams (a 4xx through the Service, never a 5xx),
// and the Service's ListTasks and ListLedger answer any cursor with a
// page or a ValidationError on "cursor". A page's tasks are the owner's
// and newest first whatever the cursor.
func FuzzCursors(f *testing.F) {
	mr := miniredis.RunT(f)
	rdb := goredis.NewClient(&goredis.Options{Addr: mr.Addr()})
	f.Cleanup(func() { _ = rdb.Close() })
	clock := imagegentest.NewClock(time.Time{})
	store, err := redisstore.New(rdb, redisstore.Config{Clock: clock, Retention: time.Hour})
	if err != nil {
		f.Fatal(err)
	}
	s := apitest.New(f, apitest.Config{Clock: clock, Store: store})
	ctx := context.Background()
	s.User("alice", 100)
	s.User("bob", 100)
	var first imagegen.TaskPage
	for i := range 4 {
		for _, owner := range []string{"alice", "bob"} {
			if _, err := s.Service.Submit(ctx, owner, imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "a lighthouse"}); err != nil {
				f.Fatal(err)
			}
		}
		clock.Advance(time.Second)
		if i == 1 {
			if first, err = store.ListTasks(ctx, "alice", "", 1, ""); err != nil {
				f.Fatal(err)
			}
		}
	}
	for _, c := range []string{"", first.Next, "1", "3", "0", "-1", "+2", "02", " 2", "9223372036854775808", "0x2", "1e3", "٣", "abc",
		"(", "[", "-", "+", "(abc:def", ":", "0000000000000:", "9999999999999:zzz", "\xff:\xff", "1:2:3"} {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, cursor string) {
		refused := func(what string, err error) {
			t.Helper()
			if err != nil && !errors.Is(err, imagegen.ErrInvalidParams) {
				t.Fatalf("%s(cursor %q): %v, not ErrInvalidParams", what, cursor, err)
			}
		}
		page, err := store.ListTasks(ctx, "alice", "", 2, cursor)
		refused("ListTasks", err)
		for i, task := range page.Tasks {
			if task.Owner != "alice" || (i > 0 && task.CreatedAt.After(page.Tasks[i-1].CreatedAt)) {
				t.Fatalf("ListTasks(cursor %q): task %d of %s, created %v, in a page of alice's newest first", cursor, i, task.Owner, task.CreatedAt)
			}
		}
		_, err = store.ListAllTasks(ctx, imagegen.TaskFilter{}, 2, cursor)
		refused("ListAllTasks", err)
		_, err = store.ListLedger(ctx, "alice", 2, cursor)
		refused("ListLedger", err)

		var ve *imagegen.ValidationError
		if _, err := s.Service.ListTasks(ctx, "alice", "", 2, cursor); err != nil && (!errors.As(err, &ve) || ve.Field != "cursor") {
			t.Fatalf("Service.ListTasks(cursor %q): %v, not a ValidationError on cursor", cursor, err)
		}
		if _, err := s.Service.ListLedger(ctx, "alice", 2, cursor); err != nil && (!errors.As(err, &ve) || ve.Field != "cursor") {
			t.Fatalf("Service.ListLedger(cursor %q): %v, not a ValidationError on cursor", cursor, err)
		}
	})
}
