package storetest

import (
	"testing"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/matryer/is"
)

func testList(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	grant(t, s, "u", 7)
	grant(t, s, "v", 1)
	ids := submitApart(t, h, "u", 7)
	// Finish the two oldest: one success, one failure.
	c := claim(t, s)
	is.NoErr(s.CompleteTask(ctx, c.ID, c.Attempt, nil, nil))
	c = claim(t, s)
	is.NoErr(errOf(s.FailTask(ctx, c.ID, c.Attempt, fail("no"))))
	other := submit(t, s, "v", 1) // after the claims: fair share would take it before u's second

	// All of u's, newest first, three at a time.
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		is.True(pages < 10)
		page, err := s.ListTasks(ctx, "u", "", 3, cursor)
		is.NoErr(err)
		is.True(len(page.Tasks) <= 3)
		for _, task := range page.Tasks {
			is.Equal(task.Owner, "u")
			got = append(got, task.ID)
		}
		if page.Next == "" {
			break
		}
		cursor = page.Next
	}
	want := make([]string, 0, len(ids))
	for i := len(ids) - 1; i >= 0; i-- {
		want = append(want, ids[i])
	}
	is.Equal(got, want)

	// Filtered by status.
	page, err := s.ListTasks(ctx, "u", imagegen.StatusPending, 10, "")
	is.NoErr(err)
	is.Equal(len(page.Tasks), 5)
	is.Equal(page.Next, "")
	page, err = s.ListTasks(ctx, "u", imagegen.StatusFailed, 10, "")
	is.NoErr(err)
	is.Equal(len(page.Tasks), 1)
	is.Equal(page.Tasks[0].ID, ids[1])

	// Others' tasks never show; expired ones are gone.
	page, err = s.ListTasks(ctx, "v", "", 10, "")
	is.NoErr(err)
	is.Equal(len(page.Tasks), 1)
	is.Equal(page.Tasks[0].ID, other.ID)
	h.Advance(h.Retention + time.Second)
	page, err = s.ListTasks(ctx, "u", "", 10, "")
	is.NoErr(err)
	is.Equal(len(page.Tasks), 5) // the two finished ones expired
	for _, task := range page.Tasks {
		is.Equal(task.Status, imagegen.StatusPending)
	}
}
