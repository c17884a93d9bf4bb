package main

import (
	"errors"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/matryer/is"
	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv"
	redisstore "github.com/imagegen/imagegen/store/redis"
)

// storeService gives the test its own service on the Redis store of rdb,
// running model, to set up and inspect tasks without going through a
// process.
func storeService(t *testing.T, rdb *goredis.Client, model imagegen.Model) *imagegen.Service {
	t.Helper()
	store, err := redisstore.New(rdb, redisstore.Config{})
	is.New(t).NoErr(err)
	svc, err := imagegen.New(imagegen.Config{Store: store, Model: model, Logger: slog.New(slog.DiscardHandler)})
	is.New(t).NoErr(err)
	return svc
}

var t2i = imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "a lighthouse"}

// A worker killed with SIGKILL in the middle of a generation loses its
// lease; another worker finishes the task exactly once, and the user is
// charged exactly once.
func TestKilledWorkerTaskFinishedByAnother(t *testing.T) {
	r := startRedis(t)
	svc := storeService(t, r.client(t), imagegentest.NewModel(1))
	killedWorkerTaskFinishedByAnother(t, svc, "-redis", r.url())
}

// killedWorkerTaskFinishedByAnother runs the scenario on the shared
// store that svc uses and storeArgs name for the worker processes.
func killedWorkerTaskFinishedByAnother(t *testing.T, svc *imagegen.Service, storeArgs ...string) {
	is := is.New(t)
	_, err := svc.Grant(ctx, "u", 10, "start")
	is.NoErr(err)
	sub, err := svc.Submit(ctx, "u", t2i)
	is.NoErr(err)
	worker := func(args ...string) *proc {
		return startImagegen(t, append(append([]string{"worker"}, storeArgs...), args...)...)
	}

	// The first worker takes the task and is killed while generating.
	slow := worker("-placeholder-delay", "1h", "-lease", "2s", "-workers", "1")
	testenv.Eventually(t, 20*time.Second, "the first worker claims the task", func() bool {
		task, err := svc.Task(ctx, "u", sub.TaskID)
		return err == nil && task.Status == imagegen.StatusProcessing
	})
	slow.kill()

	fast := worker("-placeholder-delay", "0", "-lease", "2s", "-workers", "1")
	var task *imagegen.Task
	testenv.Eventually(t, 30*time.Second, "another worker finishes the task", func() bool {
		task, err = svc.Task(ctx, "u", sub.TaskID)
		return err == nil && task.Status.Terminal()
	})
	is.Equal(task.Status, imagegen.StatusSuccess)
	is.Equal(task.Attempt, 2)
	is.Equal(len(task.Images), 1)
	_, err = svc.Image(ctx, task.Images[0])
	is.NoErr(err)

	balance, err := svc.Balance(ctx, "u")
	is.NoErr(err)
	is.Equal(balance, int64(9)) // charged once, not refunded
	ledger, err := svc.Ledger(ctx, "u")
	is.NoErr(err)
	is.Equal(len(ledger), 2) // the grant and the one charge
	fast.stop(t)
}

// Redis is killed and restarted (append-only file, fsync always) while
// tasks are being submitted and generated: every acknowledged task ends
// in success, none is lost, and every balance is right.
func TestRedisRestartLosesNoAcknowledgedTask(t *testing.T) {
	is := is.New(t)
	r := startRedis(t, "--appendonly", "yes", "--appendfsync", "always")
	svc := storeService(t, r.client(t), imagegentest.NewModel(1))
	const credits = 100
	_, err := svc.Grant(ctx, "u", credits, "start")
	is.NoErr(err)
	w := startImagegen(t, "worker", "-redis", r.url(), "-placeholder-delay", "100ms", "-lease", "2s", "-workers", "2")

	var acked []string
	submit := func(n int) {
		for range n {
			sub, err := svc.Submit(ctx, "u", t2i)
			if err == nil {
				acked = append(acked, sub.TaskID)
			}
		}
	}
	submit(10)
	r.restart(t)
	submit(10)
	is.True(len(acked) >= 10)

	for _, id := range acked {
		testenv.Eventually(t, 60*time.Second, "task "+id+" finishes", func() bool {
			task, err := svc.Task(ctx, "u", id)
			is.True(err == nil || !errors.Is(err, imagegen.ErrTaskNotFound)) // never lost
			return err == nil && task.Status.Terminal()
		})
		task, err := svc.Task(ctx, "u", id)
		is.NoErr(err)
		is.Equal(task.Status, imagegen.StatusSuccess)
	}
	balance, err := svc.Balance(ctx, "u")
	is.NoErr(err)
	is.Equal(balance, int64(credits-len(acked)))
	ledger, err := svc.Ledger(ctx, "u")
	is.NoErr(err)
	is.Equal(len(ledger), 1+len(acked)) // the grant and one charge per acknowledged task
	w.stop(t)
}

// With Redis down, submit answers 500 internal_error and charges nothing;
// when Redis is back, the same process serves again by itself.
func TestRedisUnreachableThenBack(t *testing.T) {
	is := is.New(t)
	r := startRedis(t, "--appendonly", "yes", "--appendfsync", "always")
	key := "outage-key-0123456789"
	_, base := startServeProcess(t, "-redis", r.url(), "-demo-key", key, "-demo-credits", "5", "-workers", "0")
	body := `{"scene":"text-to-image","prompt":"a lighthouse"}`

	r.kill()
	code, resp := httpCall(t, "POST", base+"/api/v1/generate", key, body)
	is.Equal(code, http.StatusInternalServerError)
	is.Equal(resp["error"].(map[string]any)["code"], "internal_error")

	r.restart(t)
	var sub map[string]any
	testenv.Eventually(t, 20*time.Second, "submit works again", func() bool {
		code, sub = httpCall(t, "POST", base+"/api/v1/generate", key, body)
		return code == http.StatusCreated
	})
	is.Equal(sub["credits_remaining"], 4.0) // the failed submit charged nothing
}
