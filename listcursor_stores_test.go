package imagegen_test

import (
	"slices"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/google/uuid"
	"github.com/matryer/is"
	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/internal/testenv/pgtest"
	"github.com/imagegen/imagegen/internal/testenv/redistest"
	"github.com/imagegen/imagegen/store/memory"
	"github.com/imagegen/imagegen/store/postgres"
	redisstore "github.com/imagegen/imagegen/store/redis"
)

// cursorStores make the stores the sealed cursors are paged through on:
// memory, miniredis, and the Redis and PostgreSQL of IMAGEGEN_TEST_REDIS
// and IMAGEGEN_TEST_POSTGRES (skipped when unset).
var cursorStores = map[string]func(t *testing.T) imagegen.Store{
	"memory": func(t *testing.T) imagegen.Store { return testenv.Memory(t, memory.Config{}) },
	"miniredis": func(t *testing.T) imagegen.Store {
		rdb := goredis.NewClient(&goredis.Options{Addr: miniredis.RunT(t).Addr()})
		t.Cleanup(func() { _ = rdb.Close() })
		s, err := redisstore.New(rdb, redisstore.Config{})
		is.New(t).NoErr(err)
		return s
	},
	"redis": func(t *testing.T) imagegen.Store {
		rdb := redistest.Connect(t)
		s, err := redisstore.New(rdb, redisstore.Config{Prefix: "imagegen-test-" + uuid.NewString()})
		is.New(t).NoErr(err)
		t.Cleanup(func() { redistest.DeleteKeys(t, rdb, s.KeyPattern()) })
		return s
	},
	"postgres": func(t *testing.T) imagegen.Store {
		return pgtest.NewStore(t, pgtest.Connect(t), postgres.Config{})
	},
}

// Paging with the sealed cursors through a user's tasks (all, and by
// status) and ledger, while another user submits between the pages,
// returns each of the user's tasks and entries once, on every store.
func TestListCursorsPageEveryTaskAndEntryOnce(t *testing.T) {
	for name, newStore := range cursorStores {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			svc, err := imagegen.New(imagegen.Config{Store: newStore(t), Model: imagegentest.NewModel(1), Logger: quiet, MaxPending: -1})
			is.NoErr(err)
			_, err = svc.Grant(ctx, "alice", 7, "alice-grant")
			is.NoErr(err)
			_, err = svc.Grant(ctx, "bob", 100, "bob-grant")
			is.NoErr(err)
			bobSubmits := func() {
				_, err := svc.Submit(ctx, "bob", textReq)
				is.NoErr(err)
			}
			want := map[imagegen.Status][]string{}
			for i := range 7 {
				sub, err := svc.Submit(ctx, "alice", textReq)
				is.NoErr(err)
				bobSubmits()
				status := imagegen.StatusPending
				if i%3 == 0 {
					is.NoErr(svc.Cancel(ctx, "alice", sub.TaskID))
					status = imagegen.StatusFailed
				}
				want[""] = append(want[""], sub.TaskID)
				want[status] = append(want[status], sub.TaskID)
			}

			for status, ids := range want {
				var got []string
				for cursor, pages := "", 0; ; pages++ {
					is.True(pages <= len(ids)) // no endless paging
					page, err := svc.ListTasks(ctx, "alice", status, 2, cursor)
					is.NoErr(err)
					for _, task := range page.Tasks {
						got = append(got, task.ID)
					}
					bobSubmits()
					if cursor = page.Next; cursor == "" {
						break
					}
				}
				// Every task once (a store orders tasks made in the same
				// millisecond as it may).
				slices.Sort(got)
				slices.Sort(ids)
				is.Equal(got, ids)
			}

			ledger, err := svc.Ledger(ctx, "alice")
			is.NoErr(err)
			is.True(len(ledger) > 7) // the grant, the charges and the refunds
			var entries []imagegen.LedgerEntry
			for cursor, pages := "", 0; ; pages++ {
				is.True(pages <= len(ledger))
				page, err := svc.ListLedger(ctx, "alice", 3, cursor)
				is.NoErr(err)
				entries = append(entries, page.Entries...)
				bobSubmits()
				if cursor = page.Next; cursor == "" {
					break
				}
			}
			slices.Reverse(ledger) // newest first
			is.Equal(len(entries), len(ledger))
			for i := range ledger {
				is.Equal(entries[i].ID, ledger[i].ID)
			}
		})
	}
}
