package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/metrics"
	"github.com/imagegen/imagegen/store/memory"
)

type queue struct {
	st  imagegen.QueueStats
	err error
}

func (q *queue) QueueStats(context.Context) (imagegen.QueueStats, error) { return q.st, q.err }

func TestCountsWhatItIsTold(t *testing.T) {
	is := is.New(t)
	reg := prometheus.NewRegistry()
	q := &queue{st: imagegen.QueueStats{Pending: 7, Processing: 2, OldestPending: 1500 * time.Millisecond}}
	m, err := metrics.New(metrics.Config{Registerer: reg, Queue: q})
	is.NoErr(err)

	m.TaskSubmitted(imagegen.SceneTextToImage, "openai", 2)
	m.TaskSubmitted(imagegen.SceneImageToImage, "openai", 3)
	m.TaskSubmitted(imagegen.SceneTextToImage, "openai", 2) // the same labels again: counted in the same child
	m.TaskClaimed("openai", 2*time.Second)
	m.TaskFinished("openai", imagegen.StatusSuccess, "", 4*time.Second)
	m.TaskFinished("openai", imagegen.StatusFailed, imagegen.CodeCancelled, 0)
	m.TaskFinished("openai", imagegen.StatusFailed, imagegen.CodeInternal, 0) // lease recovery: no generation time
	m.CreditsRefunded(3)
	m.CreditsCharged(4) // an operator's re-charge
	m.ProviderRequest("openai", imagegen.OutcomeUnavailable)
	m.Fallback("openai", "gemini")
	m.HTTPRequest("POST /api/v1/generate", 201, 3*time.Millisecond)
	m.HTTPRequest("POST /api/v1/generate", 429, time.Millisecond)
	m.HTTPRequest("POST /api/v1/generate", 201, 2*time.Millisecond)
	m.WebhookDelivery("delivered")

	want := `
# HELP imagegen_credits_charged_total Credits charged for submitted tasks and operators' re-charged retries.
# TYPE imagegen_credits_charged_total counter
imagegen_credits_charged_total 11
# HELP imagegen_credits_refunded_total Credits given back for failed and cancelled tasks.
# TYPE imagegen_credits_refunded_total counter
imagegen_credits_refunded_total 3
# HELP imagegen_http_requests_total API requests answered, by route pattern and status code.
# TYPE imagegen_http_requests_total counter
imagegen_http_requests_total{code="201",route="POST /api/v1/generate"} 2
imagegen_http_requests_total{code="429",route="POST /api/v1/generate"} 1
# HELP imagegen_provider_fallbacks_total Moves of a fallback chain from one model to the next.
# TYPE imagegen_provider_fallbacks_total counter
imagegen_provider_fallbacks_total{from="openai",to="gemini"} 1
# HELP imagegen_provider_requests_total Generation calls to providers, by provider and outcome.
# TYPE imagegen_provider_requests_total counter
imagegen_provider_requests_total{outcome="unavailable",provider="openai"} 1
# HELP imagegen_queue_depth Tasks in the queue, by status (pending: ready or waiting out a retry delay; processing: leased).
# TYPE imagegen_queue_depth gauge
imagegen_queue_depth{status="pending"} 7
imagegen_queue_depth{status="processing"} 2
# HELP imagegen_queue_oldest_pending_seconds How long the oldest ready pending task has waited (0 when none is ready).
# TYPE imagegen_queue_oldest_pending_seconds gauge
imagegen_queue_oldest_pending_seconds 1.5
# HELP imagegen_rate_limited_total API requests refused with 429 (per-key or failed-authentication limit).
# TYPE imagegen_rate_limited_total counter
imagegen_rate_limited_total 1
# HELP imagegen_tasks_finished_total Tasks that reached success or failed, by model, status and error code.
# TYPE imagegen_tasks_finished_total counter
imagegen_tasks_finished_total{error_code="",model="openai",status="success"} 1
imagegen_tasks_finished_total{error_code="cancelled",model="openai",status="failed"} 1
imagegen_tasks_finished_total{error_code="internal",model="openai",status="failed"} 1
# HELP imagegen_tasks_submitted_total Tasks created (and charged), by scene and model.
# TYPE imagegen_tasks_submitted_total counter
imagegen_tasks_submitted_total{model="openai",scene="image-to-image"} 1
imagegen_tasks_submitted_total{model="openai",scene="text-to-image"} 2
# HELP imagegen_webhook_deliveries_total Callback delivery attempts, by outcome (delivered, retry, given_up, dropped, not_sent).
# TYPE imagegen_webhook_deliveries_total counter
imagegen_webhook_deliveries_total{outcome="delivered"} 1
`
	is.NoErr(testutil.GatherAndCompare(reg, strings.NewReader(want),
		"imagegen_credits_charged_total", "imagegen_credits_refunded_total", "imagegen_http_requests_total",
		"imagegen_provider_fallbacks_total", "imagegen_provider_requests_total", "imagegen_queue_depth",
		"imagegen_queue_oldest_pending_seconds", "imagegen_rate_limited_total", "imagegen_tasks_finished_total",
		"imagegen_tasks_submitted_total", "imagegen_webhook_deliveries_total"))

	// Histograms: one queue wait, one generation (the cancel and the
	// recovered task have none), three requests.
	families, err := reg.Gather()
	is.NoErr(err)
	counts := map[string]uint64{}
	for _, f := range families {
		for _, mm := range f.Metric {
			if h := mm.GetHistogram(); h != nil {
				counts[f.GetName()] += h.GetSampleCount()
			}
		}
	}
	is.Equal(counts["imagegen_task_queue_wait_seconds"], uint64(1))
	is.Equal(counts["imagegen_task_generation_seconds"], uint64(1))
	is.Equal(counts["imagegen_http_request_seconds"], uint64(3))
	is.True(testutil.CollectAndCount(reg, "go_goroutines") == 1)

	// A store that does not answer leaves the gauges out of the scrape.
	q.err = errors.New("connection refused")
	is.Equal(testutil.CollectAndCount(reg, "imagegen_queue_depth"), 0)
}

func TestRegistersOnlyWhereItIsTold(t *testing.T) {
	is := is.New(t)
	_, err := metrics.New(metrics.Config{})
	is.True(err != nil) // no Registerer: never the global one implicitly

	reg := prometheus.NewRegistry()
	_, err = metrics.New(metrics.Config{Registerer: reg})
	is.NoErr(err)
	_, err = metrics.New(metrics.Config{Registerer: reg})
	is.True(err != nil) // the same metrics twice on one registry

	// The embedder's own Go and process collectors are kept.
	own := prometheus.NewRegistry()
	is.NoErr(own.Register(collectors.NewGoCollector()))
	_, err = metrics.New(metrics.Config{Registerer: own})
	is.NoErr(err)
}

// A service counts through Metrics what lease recovery fails and what an
// operator re-charges, so finished_total, refunded_total and
// charged_total add up with the ledger.
func TestServiceCountsRecoveryAndRecharge(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	m, err := metrics.New(metrics.Config{Registerer: reg, NoRuntimeCollectors: true})
	is.NoErr(err)
	clock := imagegentest.NewClock(time.Time{})
	store := testenv.Memory(t, memory.Config{Clock: clock, Retention: time.Hour})
	const lease = time.Minute
	svc, err := imagegen.New(imagegen.Config{
		Store:        store,
		Model:        imagegentest.NewModel(3),
		Clock:        clock,
		Observer:     m,
		Logger:       slog.New(slog.DiscardHandler),
		WorkerConfig: imagegen.WorkerConfig{LeaseDuration: lease, MaxAttempts: 1},
	})
	is.NoErr(err)
	_, err = svc.Grant(ctx, "u", 3, "grant-1")
	is.NoErr(err)
	sub, err := svc.Submit(ctx, "u", imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "a lighthouse"})
	is.NoErr(err)
	_, err = store.ClaimTask(ctx, lease) // its worker dies
	is.NoErr(err)
	clock.Advance(lease)
	n, err := svc.Recover(ctx)
	is.NoErr(err)
	is.Equal(n, 1)
	is.NoErr(svc.Inspector().Retry(ctx, sub.TaskID, true, "worker fixed"))

	want := `
# HELP imagegen_credits_charged_total Credits charged for submitted tasks and operators' re-charged retries.
# TYPE imagegen_credits_charged_total counter
imagegen_credits_charged_total 6
# HELP imagegen_credits_refunded_total Credits given back for failed and cancelled tasks.
# TYPE imagegen_credits_refunded_total counter
imagegen_credits_refunded_total 3
# HELP imagegen_tasks_finished_total Tasks that reached success or failed, by model, status and error code.
# TYPE imagegen_tasks_finished_total counter
imagegen_tasks_finished_total{error_code="internal",model="scripted",status="failed"} 1
`
	is.NoErr(testutil.GatherAndCompare(reg, strings.NewReader(want),
		"imagegen_credits_charged_total", "imagegen_credits_refunded_total", "imagegen_tasks_finished_total"))
	b, err := svc.Balance(ctx, "u")
	is.NoErr(err)
	is.Equal(b, int64(3-6+3)) // the ledger agrees: charged 6, refunded 3
}

// imagegen_tasks_waiting reads from the store which ready tasks the
// workers' caps hold back, by reason.
func TestTasksWaiting(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	store, err := memory.New(memory.Config{})
	is.NoErr(err)
	limits := imagegen.Limits{OwnerConcurrency: 1}
	reg := prometheus.NewRegistry()
	_, err = metrics.New(metrics.Config{Registerer: reg, NoRuntimeCollectors: true, Scheduler: store, Limits: limits})
	is.NoErr(err)
	_, err = store.AddEntry(ctx, imagegen.LedgerEntry{Owner: "u", Kind: imagegen.LedgerGrant, Amount: 3, Ref: "g"})
	is.NoErr(err)
	for i := range 3 {
		_, err := store.CreateTask(ctx, &imagegen.Task{ID: fmt.Sprint("t", i), Owner: "u", Model: "m", Cost: 1,
			Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p"}}, imagegen.CreateParams{})
		is.NoErr(err)
	}
	_, err = store.ClaimTasks(ctx, imagegen.ClaimParams{Lease: time.Minute, N: 3, Limits: limits})
	is.NoErr(err)
	is.NoErr(testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP imagegen_tasks_waiting Ready tasks held back now by a cap or a rate, by reason: owner_cap, model_cap, model_rate (a rate, or a pause after a provider's 429).
# TYPE imagegen_tasks_waiting gauge
imagegen_tasks_waiting{reason="model_cap"} 0
imagegen_tasks_waiting{reason="model_rate"} 0
imagegen_tasks_waiting{reason="owner_cap"} 2
`), "imagegen_tasks_waiting"))
}
