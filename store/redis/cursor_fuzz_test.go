package redis_test

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv/apitest"
	redisstore "github.com/imagegen/imagegen/store/redis"
	"github.com/imagegen/imagegen/store/storetest"
)

// FuzzCursors gives any cursor to the Redis store's three cursor-paged
// lists and the Service's on miniredis, with two owners' tasks and
// ledger entries to page through, as memory's FuzzCursors does
// (storetest.CheckCursor says what each must answer).
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
		storetest.CheckCursor(t, store, s.Service, "alice", cursor)
	})
}
