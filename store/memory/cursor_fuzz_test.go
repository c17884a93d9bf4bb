package memory_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/internal/testenv/apitest"
	"github.com/imagegen/imagegen/store/memory"
)

// FuzzCursors gives any cursor to the memory store's three cursor-paged
// lists (ListTasks, ListAllTasks, ListLedger), with tasks and ledger
// entries to page through: none panics, a cursor it refuses is refused
// with an error that wraps imagegen.ErrInvalidParams (which the Service
// turns into a ValidationError on "cursor", a 4xx), and the Service's
// ListTasks and ListLedger answer any cursor with a page or such a
// ValidationError.
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
		refused := func(what string, err error) {
			t.Helper()
			if err != nil && !errors.Is(err, imagegen.ErrInvalidParams) {
				t.Fatalf("%s(cursor %q): %v, not ErrInvalidParams", what, cursor, err)
			}
		}
		_, err := store.ListTasks(ctx, "alice", "", 2, cursor)
		refused("ListTasks", err)
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
