package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/matryer/is"
)

func testRetention(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	if h.Retention <= 2*time.Second {
		t.Fatalf("storetest: Harness.Retention must be over 2s (got %v)", h.Retention)
	}
	grant(t, s, "u", 3)
	ok := submit(t, s, "u", 1)
	bad := submit(t, s, "u", 1)
	waiting := submit(t, s, "u", 1)
	c := claim(t, s)
	is.NoErr(s.CompleteTask(ctx, ok.ID, c.Attempt, []imagegen.Image{image(ok.ID + "-a"), image(ok.ID + "-b")}, nil))
	c = claim(t, s)
	is.NoErr(errOf(s.FailTask(ctx, bad.ID, c.Attempt, fail("refused"))))

	done := get(t, s, "u", ok.ID)
	is.True(done.ExpiresAt.Equal(done.FinishedAt.Add(h.Retention)))
	img, err := s.Image(ctx, ok.ID+"-a")
	is.NoErr(err)
	is.Equal(img.TaskID, ok.ID)
	is.Equal(img.ContentType, "image/png")
	is.Equal(img.Size, int64(len(ok.ID)+len("-a")))
	is.True(img.ExpiresAt.Equal(done.ExpiresAt))

	h.Advance(h.Retention - time.Second)
	get(t, s, "u", ok.ID)
	get(t, s, "u", bad.ID)
	_, err = s.Image(ctx, ok.ID+"-b")
	is.NoErr(err)

	h.Advance(2 * time.Second)
	for _, id := range []string{ok.ID, bad.ID} {
		_, err = s.Task(ctx, "u", id)
		is.True(errors.Is(err, imagegen.ErrTaskNotFound))
	}
	for _, id := range []string{ok.ID + "-a", ok.ID + "-b"} {
		_, err = s.Image(ctx, id)
		is.True(errors.Is(err, imagegen.ErrImageNotFound))
	}
	// A task that has not finished is kept, and the ledger is untouched.
	is.Equal(get(t, s, "u", waiting.ID).Status, imagegen.StatusPending)
	is.Equal(balance(t, s, "u"), int64(1))
	checkLedger(t, s, "u")
}
