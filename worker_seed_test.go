package imagegen_test

import (
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
)

// A model that reports it used another seed than the task's (its
// provider chose its own) leaves that seed on the task at its success;
// one outside 0 to MaxSeed, which no request could carry, is not
// recorded; a task whose model takes no seed records none.
func TestTheSeedTheModelUsedIsRecorded(t *testing.T) {
	for _, c := range []struct {
		name   string
		seeded bool
		step   imagegentest.Step
		want   *int64
	}{
		{"the model's seed", true, imagegentest.SucceedWithSeed(77), ptr(int64(77))},
		{"the task's own, reported", true, imagegentest.SucceedWithSeed(42), ptr(int64(42))},
		{"none reported", true, imagegentest.Succeed(), ptr(int64(42))},
		{"out of range", true, imagegentest.SucceedWithSeed(imagegen.MaxSeed + 1), ptr(int64(42))},
		{"a model without seeds", false, imagegentest.SucceedWithSeed(77), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			m := imagegentest.NewModel(1, c.step)
			if c.seeded {
				m.TakesSeeds()
			}
			f := newFixture(t, m)
			f.funded(t, "u", 1)
			req := textReq
			req.Seed = ptr(int64(42))
			sub, err := f.svc.Submit(ctx, "u", req)
			is.NoErr(err)
			is.True(f.runOnce(t))
			task, err := f.svc.Task(ctx, "u", sub.TaskID)
			is.NoErr(err)
			is.Equal(task.Status, imagegen.StatusSuccess)
			if c.want == nil {
				is.Equal(task.Request.Seed, nil)
				return
			}
			is.Equal(*task.Request.Seed, *c.want)
		})
	}
}

func ptr[T any](v T) *T { return &v }
