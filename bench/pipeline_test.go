package bench

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/testenv/redistest"
)

// workers is the concurrency of both pipelines.
const workers = 16

// instantModel makes a tiny image at once: the pipeline benchmarks
// measure the queue, not a model.
type instantModel struct{}

func (instantModel) Plan(imagegen.Request) (imagegen.Plan, error) {
	return imagegen.Plan{Model: "instant", Cost: 1}, nil
}

func (instantModel) Generate(context.Context, imagegen.Generation) ([]imagegen.GeneratedImage, error) {
	return []imagegen.GeneratedImage{{ContentType: "image/png", Data: []byte("\x89PNG tiny")}}, nil
}

// countingStore counts completed tasks and says when n are done.
type countingStore struct {
	imagegen.Store
	n    int64
	done atomic.Int64
	all  chan struct{}
}

func (s *countingStore) CompleteTask(ctx context.Context, id string, attempt int, images []imagegen.Image, seed *int64) error {
	err := s.Store.CompleteTask(ctx, id, attempt, images, seed)
	if err == nil && s.done.Add(1) == s.n {
		close(s.all)
	}
	return err
}

// CompleteTaskWithBytes passes a BytesCompleter store's one-step success
// through (so that wrapping leaves the store's path as it is) and counts
// it; for any other store it declines, and the Service completes with
// CompleteTask.
func (s *countingStore) CompleteTaskWithBytes(ctx context.Context, id string, attempt int, images []imagegen.Image, data [][]byte, seed *int64) (bool, error) {
	bc, ok := s.Store.(imagegen.BytesCompleter)
	if !ok {
		return false, nil
	}
	done, err := bc.CompleteTaskWithBytes(ctx, id, attempt, images, data, seed)
	if done && err == nil && s.done.Add(1) == s.n {
		close(s.all)
	}
	return done, err
}

// BenchmarkRedisPipeline measures end-to-end processing with an instant
// model: b.N tasks are queued first, then the clock runs from starting
// the workers until the last task is done. imagegen's Service on the
// Redis store against an asynq Server, each with 16 workers. Each
// reports the server's CPU time a task over the timed part too
// (rediscpu-µs/op, when the server runs on this machine).
func BenchmarkRedisPipeline(b *testing.B) {
	opt := redisOptions(b)

	b.Run("imagegen", func(b *testing.B) {
		runServicePipeline(b, newStore(b, redistest.NewClient(b, opt)), nil, redisCPU(b, opt))
	})

	b.Run("asynq", func(b *testing.B) {
		client, queue := newAsynq(b, opt)
		for range b.N {
			if _, err := client.Enqueue(asynq.NewTask("generate", benchRequest), asynq.Queue(queue), asynq.TaskID(uuid.NewString())); err != nil {
				b.Fatal(err)
			}
		}
		var handled atomic.Int64
		allHandled, all := make(chan struct{}), make(chan struct{})
		srv := asynq.NewServer(asynqOpt(opt), asynq.Config{
			Concurrency: workers, Queues: map[string]int{queue: 1},
			Logger: quietAsynq{}, LogLevel: asynq.ErrorLevel,
		})
		inspector := asynq.NewInspector(asynqOpt(opt))
		defer inspector.Close()
		report := redisCPU(b, opt).start()
		b.ResetTimer()
		err := srv.Start(asynq.HandlerFunc(func(context.Context, *asynq.Task) error {
			if handled.Add(1) == int64(b.N) {
				close(allHandled)
			}
			return nil
		}))
		if err != nil {
			b.Fatal(err)
		}
		// Done when asynq has recorded every task as processed, not just
		// handed it to the handler. Its queue's counts are read only once
		// the handler has had every task (a Lua script a read: read every
		// millisecond for the whole run, they cost the server about 5 %
		// of asynq's run), for the last acknowledgements.
		go func() {
			defer close(all)
			<-allHandled
			for {
				info, err := inspector.GetQueueInfo(queue)
				if err == nil && info.Processed >= b.N {
					return
				}
				time.Sleep(time.Millisecond)
			}
		}()
		<-all
		b.StopTimer()
		report()
		srv.Shutdown()
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tasks/s")
	})
}

// quietAsynq drops asynq's logs.
type quietAsynq struct{}

func (quietAsynq) Debug(...any) {}
func (quietAsynq) Info(...any)  {}
func (quietAsynq) Warn(...any)  {}
func (quietAsynq) Error(...any) {}
func (quietAsynq) Fatal(...any) {}

// probe measures something over a pipeline's timed part: it is called
// as the timer starts and returns what to call once it stops (to report
// the measure). nil measures nothing.
type probe func() (report func())

// start runs p, if any, and returns its report (a no-op for none).
func (p probe) start() func() {
	if p == nil {
		return func() {}
	}
	return p()
}

// runServicePipeline queues b.N tasks on base, then times imagegen's
// Service with 16 workers and an instant model from its start until the
// last task is done. workReady is the store's cross-process wake-up, if
// it has one; p measures the timed part, if set.
func runServicePipeline(b *testing.B, base imagegen.Store, workReady <-chan struct{}, p probe) {
	store := &countingStore{Store: base, n: int64(b.N), all: make(chan struct{})}
	svc, err := imagegen.New(imagegen.Config{
		Store:        store,
		Model:        instantModel{},
		Logger:       slog.New(slog.DiscardHandler),
		MaxPending:   -1, // all b.N tasks are queued before the workers start
		WorkerConfig: imagegen.WorkerConfig{Workers: workers, WorkReady: workReady, PollInterval: 10 * time.Millisecond},
	})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := svc.Grant(ctx, "bench", int64(b.N), "bench"); err != nil {
		b.Fatal(err)
	}
	for range b.N {
		if _, err := svc.Submit(ctx, "bench", taskRequest); err != nil {
			b.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	report := p.start()
	b.ResetTimer()
	stopped := make(chan struct{})
	go func() { defer close(stopped); _ = svc.Run(ctx) }()
	<-store.all
	b.StopTimer()
	cancel()
	<-stopped
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tasks/s")
	report()
}
