package memory_test

import (
	"context"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/internal/testenv/apitest"
	"github.com/imagegen/imagegen/store/memory"
	"github.com/imagegen/imagegen/store/storetest"
)

// FuzzCursors gives any cursor to the memory store's three cursor-paged
// lists and the Service's, with tasks and ledger entries to page
// through (storetest.CheckCursor says what each must answer).
func FuzzCursors(f *testing.F) {
	clock := imagegentest.NewClock(time.Time{})
	store := testenv.Memory(f, memory.Config{Clock: clock, Retention: time.Hour})
	s := apitest.New(f, apitest.Config{Clock: clock, Store: store})
	ctx := context.Background()
	s.User("alice", 100)
	for range 4 {
		if _, err := s.Service.Submit(ctx, "alice", imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "a lighthouse"}); err != nil {
			f.Fatal(err)
		}
		clock.Advance(time.Second)
	}
	for _, c := range []string{"", "1", "2", "3", "0", "-1", "+2", "02", " 2", "18446744073709551615", "18446744073709551616", "9223372036854775808", "0x2", "1e3", "٣", "abc"} {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, cursor string) {
		storetest.CheckCursor(t, store, s.Service, "alice", cursor)
	})
}
