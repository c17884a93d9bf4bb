package redis

import (
	"context"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
)

// A task whose stored request does not decode no longer fails its
// owner's whole listing: it is listed with what could be read (its id
// and status; its request zero), and the tasks after it are listed too.
func TestListWithAnUnreadableTaskListsItAndTheOthers(t *testing.T) {
	fundedStores(t, 10, func(t *testing.T, s *Store) {
		is := is.New(t)
		ctx := context.Background()
		createWithUnreadable(ctx, t, s)

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
		is.Equal(len(ids), 3) // every task, the unreadable one included
	})
}
