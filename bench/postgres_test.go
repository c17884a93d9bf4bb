package bench

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/internal/testenv/pgtest"
	"github.com/imagegen/imagegen/internal/testenv/redistest"
	"github.com/imagegen/imagegen/store/memory"
	"github.com/imagegen/imagegen/store/postgres"
)

// The PostgreSQL benchmarks put imagegen's PostgreSQL store beside River
// (github.com/riverqueue/river with riverpgxv5), a well-known Go job
// queue on PostgreSQL, on the same server in the same run, and beside
// imagegen's memory and Redis stores doing the same work:
//
//	cd bench && IMAGEGEN_TEST_POSTGRES='postgres://postgres@127.0.0.1:5432/test?sslmode=disable' \
//	  IMAGEGEN_TEST_REDIS=redis://127.0.0.1:6379/15 go test -run '^$' -bench Postgres -benchtime 5000x
//
// Each side gets a schema of its own (created, migrated, dropped after).

// pgPool connects to IMAGEGEN_TEST_POSTGRES or skips.
func pgPool(b *testing.B) *pgxpool.Pool { return pgtest.ConnectPool(b, 32) }

// generateArgs is River's job: the same request imagegen stores.
type generateArgs struct {
	Scene       string `json:"scene"`
	Prompt      string `json:"prompt"`
	AspectRatio string `json:"aspect_ratio"`
}

func (generateArgs) Kind() string { return "generate" }

type generateWorker struct {
	river.WorkerDefaults[generateArgs]
}

func (generateWorker) Work(context.Context, *river.Job[generateArgs]) error { return nil }

var riverArgs = generateArgs{Scene: "text-to-image", Prompt: "a lighthouse at dusk, oil painting", AspectRatio: "16:9"}

// insertRiverJobs times b.N of River's Insert from the submit
// benchmarks' concurrent clients, as submitTasks times the stores'.
func insertRiverJobs(b *testing.B, client *river.Client[pgx.Tx]) {
	timeParallel(b, func() error {
		_, err := client.Insert(ctx, riverArgs, nil)
		return err
	})
}

// newRiver migrates River into a fresh schema and returns a client on
// it; with workers > 0 it also works the default queue. River is tuned
// for throughput the way imagegen is: fetches as often as every 1 ms
// when busy, polls every 10 ms when idle (imagegen's PollInterval here).
func newRiver(b *testing.B, pool *pgxpool.Pool, workers int) *river.Client[pgx.Tx] {
	schema := pgtest.Schema(b, pool)
	driver := riverpgxv5.New(pool)
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		b.Fatal(err)
	}
	migrator, err := rivermigrate.New(driver, &rivermigrate.Config{Schema: schema, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		b.Fatal(err)
	}
	cfg := &river.Config{Schema: schema, Logger: slog.New(slog.DiscardHandler)}
	if workers > 0 {
		w := river.NewWorkers()
		river.AddWorker(w, &generateWorker{})
		cfg.Workers = w
		cfg.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: workers}}
		cfg.FetchCooldown = time.Millisecond
		cfg.FetchPollInterval = 10 * time.Millisecond
	}
	client, err := river.NewClient(driver, cfg)
	if err != nil {
		b.Fatal(err)
	}
	return client
}

// BenchmarkPostgresSubmit compares one submit through the PostgreSQL
// store (debit, ledger entry and task in one statement, one commit) with
// River's Insert of one job, on the same server, 16 goroutines per CPU;
// then the same submit on the memory and Redis stores. postgres-store-
// max-pending submits with the default pending cap (serve's -max-pending).
func BenchmarkPostgresSubmit(b *testing.B) {
	b.Run("postgres-store", func(b *testing.B) { submitTasks(b, pgtest.NewStore(b, pgPool(b), postgres.Config{})) })
	b.Run("postgres-store-max-pending", func(b *testing.B) {
		submitTasksCapped(b, pgtest.NewStore(b, pgPool(b), postgres.Config{}), imagegen.CreateParams{MaxPending: imagegen.DefaultMaxPending})
	})
	b.Run("river-insert", func(b *testing.B) {
		client := newRiver(b, pgPool(b), 0)
		b.ReportAllocs()
		insertRiverJobs(b, client)
	})
	b.Run("memory-store", func(b *testing.B) { submitTasks(b, testenv.Memory(b, memory.Config{})) })
	b.Run("redis-store", func(b *testing.B) { submitTasks(b, newStore(b, redistest.NewClient(b, redisOptions(b)))) })
}

// BenchmarkPostgresPipeline measures end-to-end processing with an
// instant model: b.N tasks are queued first, then the clock runs from
// starting 16 workers until the last task is done. imagegen's Service on
// the PostgreSQL store against a River client on the same server, then
// the Service on the memory and Redis stores.
func BenchmarkPostgresPipeline(b *testing.B) {
	b.Run("postgres-store", func(b *testing.B) {
		store := pgtest.NewStore(b, pgPool(b), postgres.Config{})
		runServicePipeline(b, store, store.WorkReady(), nil)
	})
	b.Run("postgres-store-async-success", func(b *testing.B) {
		store := pgtest.NewStore(b, pgPool(b), postgres.Config{AsyncSuccess: true})
		runServicePipeline(b, store, store.WorkReady(), nil)
	})
	b.Run("river", func(b *testing.B) { runRiverPipeline(b, pgPool(b), nil) })
	b.Run("memory-store", func(b *testing.B) { runServicePipeline(b, testenv.Memory(b, memory.Config{}), nil, nil) })
	b.Run("redis-store", func(b *testing.B) {
		runServicePipeline(b, newStore(b, redistest.NewClient(b, redisOptions(b))), nil, nil)
	})
}

// runRiverPipeline inserts b.N jobs into River on pool, then times a
// River client with 16 workers from its start until every job has
// completed; p measures the timed part, if set.
func runRiverPipeline(b *testing.B, pool *pgxpool.Pool, p probe) {
	client := newRiver(b, pool, workers)
	params := make([]river.InsertManyParams, 0, 1000)
	for i := 0; i < b.N; i += len(params) {
		params = params[:0]
		for range min(1000, b.N-i) {
			params = append(params, river.InsertManyParams{Args: riverArgs})
		}
		if _, err := client.InsertMany(ctx, params); err != nil {
			b.Fatal(err)
		}
	}
	// A buffer for every event: River drops the events a subscriber has
	// no room for, and the loop below would then wait for ever (it did,
	// on a loaded machine, with the default 1000).
	events, cancelSub := client.SubscribeConfig(&river.SubscribeConfig{ChanSize: b.N + 1, Kinds: []river.EventKind{river.EventKindJobCompleted}})
	defer cancelSub()
	var completed atomic.Int64
	report := p.start()
	b.ResetTimer()
	if err := client.Start(ctx); err != nil {
		b.Fatal(err)
	}
	for completed.Load() < int64(b.N) {
		if ev := <-events; ev != nil && ev.Kind == river.EventKindJobCompleted {
			completed.Add(1)
		}
	}
	b.StopTimer()
	stopCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_ = client.Stop(stopCtx)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tasks/s")
	report()
}
