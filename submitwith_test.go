package imagegen_test

import (
	"context"
	"errors"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/store/memory"
)

// SubmitWith applies Submit's rules and counts the task, whoever creates
// it; it refuses a store the service does not run on.
func TestSubmitWith(t *testing.T) {
	is := is.New(t)
	rec := &recorder{}
	f := newFixture(t, imagegentest.NewModel(2), func(c *imagegen.Config) { c.Observer = rec })
	f.funded(t, "alice", 5)
	created := 0
	create := func(ctx context.Context, task *imagegen.Task, p imagegen.CreateParams) (int64, error) {
		created++
		return f.store.CreateTask(ctx, task, p)
	}

	_, err := f.svc.SubmitWith(ctx, "alice", imagegen.Request{Scene: imagegen.SceneTextToImage}, f.store, create)
	is.True(errors.Is(err, imagegen.ErrInvalidParams)) // Submit's rules
	_, err = f.svc.SubmitWith(ctx, "alice", textReq, testenv.Memory(t, memory.Config{}), create)
	is.True(errors.Is(err, imagegen.ErrOtherStore))
	is.Equal(created, 0)

	sub, err := f.svc.SubmitWith(ctx, "alice", textReq, f.store, create)
	is.NoErr(err)
	is.Equal(created, 1)
	is.Equal(sub.CreditsRemaining, int64(3))
	is.Equal(rec.list(), []string{"submitted text-to-image scripted 2"})
}
