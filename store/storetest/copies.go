package storetest

import (
	"testing"

	"github.com/imagegen/imagegen"
	"github.com/matryer/is"
)

// testCopies checks that callers cannot change stored state through the
// values a store returns or takes.
func testCopies(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	grant(t, s, "u", 1)
	task := submit(t, s, "u", 1)
	task.Request.ImageInput[0] = "https://evil.example/"
	task.Status = imagegen.StatusSuccess

	got := get(t, s, "u", task.ID)
	is.Equal(got.Request.ImageInput, []string{"https://example.com/a.png"})
	is.Equal(got.Status, imagegen.StatusPending)
	got.Request.ImageInput[0] = "https://evil.example/"
	got.Owner = "mallory"
	again := get(t, s, "u", task.ID)
	is.Equal(again.Request.ImageInput, []string{"https://example.com/a.png"})
	is.Equal(again.Owner, "u")

	c := claim(t, s)
	is.NoErr(s.CompleteTask(ctx, task.ID, c.Attempt, []imagegen.Image{image(task.ID + "-img")}))
	done := get(t, s, "u", task.ID)
	done.Images[0] = "other"
	is.Equal(get(t, s, "u", task.ID).Images, []string{task.ID + "-img"})
}
