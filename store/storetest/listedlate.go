package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
)

// testFinishedLateStaysListed: a task that ends long after it was made
// (a model paused for days, a backlog slow to drain), by success,
// failure or cancel, is listed as long as it is kept, that is for its
// retention after it ends, like any other. An index of an owner's
// tasks that lives a fixed time past their creation (Redis's, a
// retention and a day past the owner's last submit) lost them.
func testFinishedLateStaysListed(t *testing.T, h Harness) {
	s := h.Store
	grant(t, s, "u", 3)
	ok, bad, gone := submit(t, s, "u", 1), submit(t, s, "u", 1), submit(t, s, "u", 1)
	h.Advance(h.Retention + 48*time.Hour)
	c := claim(t, s)
	if err := s.CompleteTask(ctx, ok.ID, c.Attempt, []imagegen.Image{image(ok.ID + "-a")}, nil); err != nil {
		t.Fatal(err)
	}
	c = claim(t, s)
	if _, err := s.FailTask(ctx, bad.ID, c.Attempt, fail("refused")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CancelTask(ctx, "u", gone.ID, imagegen.CancelParams{}); err != nil {
		t.Fatal(err)
	}
	h.Advance(h.Retention - time.Minute) // all three are kept yet
	page, err := s.ListTasks(ctx, "u", "", 10, "")
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, task := range page.Tasks {
		listed = append(listed, task.ID)
	}
	for _, task := range []*imagegen.Task{ok, bad, gone} {
		get(t, s, "u", task.ID)
		if !slices.Contains(listed, task.ID) {
			t.Errorf("task %s, kept and ended late, is not listed (listed: %q)", task.ID, listed)
		}
	}
}
