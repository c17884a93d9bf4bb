package postgres_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/testenv/pgtest"
	"github.com/imagegen/imagegen/store/postgres"
)

// A task whose stored request does not decode no longer fails its
// owner's whole listing: it is listed with what could be read (its id
// and status; its request zero), and the tasks after it are listed too.
func TestListWithAnUnreadableTaskListsItAndTheOthers(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	pool := pgtest.Connect(t)
	s := pgtest.NewStore(t, pool, postgres.Config{})
	schema := pgx.Identifier{s.Schema()}.Sanitize()
	_, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "a", Kind: imagegen.LedgerGrant, Amount: 10, Ref: "g"})
	is.NoErr(err)
	for _, id := range []string{"t1", "t2", "t3"} {
		_, err := s.CreateTask(ctx, newTask(id, "a"), imagegen.CreateParams{})
		is.NoErr(err)
	}
	// Valid JSON (the column is jsonb) that is no imagegen.Request.
	_, err = pool.Exec(ctx, fmt.Sprintf(`UPDATE %s.tasks SET request = '{"scene": 5}' WHERE id = 't2'`, schema))
	is.NoErr(err)

	var ids []string
	cursor := ""
	for range 5 {
		page, err := s.ListTasks(ctx, "a", "", 1, cursor)
		is.NoErr(err) // not a failure of the page
		for _, task := range page.Tasks {
			ids = append(ids, task.ID)
			if task.ID == "t2" {
				is.Equal(task.Status, imagegen.StatusPending)
				is.Equal(task.Request.Prompt, "") // unreadable, left zero
			}
		}
		if cursor = page.Next; cursor == "" {
			break
		}
	}
	is.Equal(ids, []string{"t3", "t2", "t1"}) // every task, newest first
}
