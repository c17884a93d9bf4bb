package webhook_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/fetch"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/store/memory"
	"github.com/imagegen/imagegen/webhook"
)

// BenchmarkBurstToOneReceiver: one owner's 100 callbacks to one loopback
// receiver that answers at once, on the wall clock, with a 1 s lease (the
// shortest a 100 ms attempt allows) so that a dispatcher bound by the
// lease can be measured too. It reports deliveries a second.
func BenchmarkBurstToOneReceiver(b *testing.B) {
	const burst = 100
	var got atomic.Int64
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got.Add(1) }))
	defer recv.Close()
	poster, err := fetch.New(fetch.Config{AllowPrivate: true})
	if err != nil {
		b.Fatal(err)
	}
	var elapsed time.Duration
	for range b.N {
		store := testenv.Memory(b, memory.Config{})
		svc, err := imagegen.New(imagegen.Config{
			Store: store, Model: imagegentest.NewModel(1),
			AllowHTTPCallbacks: true, Logger: quiet,
		})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := svc.Grant(ctx, "u", burst, uuid.NewString()); err != nil {
			b.Fatal(err)
		}
		for range burst {
			if _, err := svc.Submit(ctx, "u", imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p", CallbackURL: recv.URL + "/hook"}); err != nil {
				b.Fatal(err)
			}
			if _, err := svc.RunOnce(ctx); err != nil {
				b.Fatal(err)
			}
		}
		disp, err := webhook.NewDispatcher(webhook.Config{
			Service: svc, Store: store, Poster: poster, Logger: quiet, Render: renderStatus,
			AttemptTimeout: 100 * time.Millisecond, Lease: time.Second, PollInterval: 50 * time.Millisecond,
		})
		if err != nil {
			b.Fatal(err)
		}
		got.Store(0)
		runCtx, cancel := context.WithCancel(ctx)
		stopped := make(chan struct{})
		start := time.Now()
		go func() { defer close(stopped); _ = disp.Run(runCtx) }()
		for deadline := start.Add(5 * time.Minute); got.Load() < burst && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		elapsed += time.Since(start)
		cancel()
		<-stopped
		if got.Load() < burst {
			b.Fatalf("%d of %d delivered in 5 minutes", got.Load(), burst)
		}
	}
	b.ReportMetric(float64(burst*b.N)/elapsed.Seconds(), "deliveries/s")
}
