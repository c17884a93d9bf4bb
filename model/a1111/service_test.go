package a1111_test

import (
	"log/slog"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/model/a1111"
	"github.com/imagegen/imagegen/model/provider/providertest"
	"github.com/imagegen/imagegen/store/memory"
)

// A server that answers another seed than the one sent (its info's
// seed): the finished task shows the server's, the seed that makes the
// image again, through the service and its store.
func TestTaskRecordsTheServersSeed(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	other := int64(77)
	f.answerSeed = &other
	m, _ := newModel(t, f, a1111.Config{})
	svc, err := imagegen.New(imagegen.Config{Store: testenv.Memory(t, memory.Config{}), Model: m, Logger: slog.New(slog.DiscardHandler)})
	is.NoErr(err)
	_, err = svc.Grant(t.Context(), "u", 1, "grant-1")
	is.NoErr(err)
	req := providertest.T2I("a fox", imagegen.Aspect1x1)
	sent := int64(42)
	req.Seed = &sent
	sub, err := svc.Submit(t.Context(), "u", req)
	is.NoErr(err)
	ran, err := svc.RunOnce(t.Context())
	is.NoErr(err)
	is.True(ran)

	is.Equal(f.last(t)["seed"], 42.0) // the task's seed was sent
	task, err := svc.Task(t.Context(), "u", sub.TaskID)
	is.NoErr(err)
	is.Equal(task.Status, imagegen.StatusSuccess)
	is.Equal(*task.Request.Seed, other) // the server's is recorded
}
