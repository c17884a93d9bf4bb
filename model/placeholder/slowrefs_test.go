package placeholder_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/fetch"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/model/placeholder"
	"github.com/imagegen/imagegen/model/provider/providertest"
	"github.com/imagegen/imagegen/store/memory"
)

// TestDripFedReferencesFailTheTask: a task whose eight references drip
// bytes ends within one fetch deadline as invalid_image_input, refunded,
// after one attempt (no retry: the worker is not held again).
func TestDripFedReferencesFailTheTask(t *testing.T) {
	is := is.New(t)
	var hits atomic.Int64
	drip := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		providertest.Drip(w, r)
	}))
	t.Cleanup(drip.Close)
	const deadline = 300 * time.Millisecond
	f, err := fetch.New(fetch.Config{AllowPrivate: true, Timeout: deadline})
	is.NoErr(err)
	model, err := placeholder.New(placeholder.Config{Fetcher: f})
	is.NoErr(err)
	store := testenv.Memory(t, memory.Config{})
	svc, err := imagegen.New(imagegen.Config{Store: store, Model: model, ImageInputGuard: f, // the loopback references pass at submit
		Logger: slog.New(slog.DiscardHandler), WorkerConfig: imagegen.WorkerConfig{MaxAttempts: 3}})
	is.NoErr(err)
	ctx := context.Background()
	_, err = svc.Grant(ctx, "u", 1, "grant-1")
	is.NoErr(err)
	urls := make([]string, imagegen.MaxImageInputs)
	for i := range urls {
		urls[i] = drip.URL + "/" + string(rune('a'+i)) + ".png"
	}
	sub, err := svc.Submit(ctx, "u", providertest.I2I("x", imagegen.AspectAuto, urls...))
	is.NoErr(err)

	start := time.Now()
	ran, err := svc.RunOnce(ctx)
	took := time.Since(start)
	is.NoErr(err)
	is.True(ran)
	task, err := svc.Task(ctx, "u", sub.TaskID)
	is.NoErr(err)
	is.Equal(task.Status, imagegen.StatusFailed)
	is.Equal(task.ErrorCode, imagegen.CodeInvalidImageInput)
	is.True(task.Refunded)
	bal, err := svc.Balance(ctx, "u")
	is.NoErr(err)
	is.Equal(bal, int64(1))
	is.Equal(task.Attempt, 1)               // not retried
	is.True(took < 4*deadline)              // one deadline for all eight, not eight in a row
	is.Equal(hits.Load(), int64(len(urls))) // each fetched once
	ran, err = svc.RunOnce(ctx)
	is.NoErr(err)
	is.True(!ran) // nothing left to retry
	t.Logf("eight drip-fed references: task failed as %s after %v (deadline %v)", task.ErrorCode, took.Round(time.Millisecond), deadline)
}
