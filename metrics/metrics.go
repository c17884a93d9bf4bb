// Package metrics counts what imagegen does for Prometheus, in the
// conventions of asynq and River: low-cardinality labels only (scenes,
// models, providers, statuses, error codes, route patterns), never a user
// id, task id or key.
//
// New registers every metric on the Registerer the embedder passes (never
// the global one implicitly). The returned *Metrics is the Observer of
// imagegen.Config, httpapi.Config and webhook.Config:
//
//	reg := prometheus.NewRegistry()
//	m, err := metrics.New(metrics.Config{Registerer: reg, Queue: store})
//	svc, err := imagegen.New(imagegen.Config{Store: store, Model: model, Observer: m})
//	api, err := httpapi.New(httpapi.Config{Service: svc, Limiter: lim, Observer: m})
//	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
//
// The metrics:
//
//	imagegen_tasks_submitted_total{scene,model}               counter
//	imagegen_tasks_finished_total{model,status,error_code}    counter
//	imagegen_task_queue_wait_seconds                          histogram: ready to claimed
//	imagegen_task_generation_seconds                          histogram: the finishing attempt's run
//	imagegen_queue_depth{status}                              gauge: pending, processing (read from the store)
//	imagegen_queue_oldest_pending_seconds                     gauge: wait of the oldest ready task (from the store)
//	imagegen_tasks_waiting{reason}                            gauge: ready tasks a cap or rate holds back (from the store)
//	imagegen_provider_requests_total{provider,outcome}        counter
//	imagegen_provider_fallbacks_total{from,to}                counter
//	imagegen_credits_charged_total                            counter
//	imagegen_credits_refunded_total                           counter
//	imagegen_http_requests_total{route,code}                  counter
//	imagegen_http_request_seconds{route}                      histogram
//	imagegen_rate_limited_total                               counter: 429 answers
//	imagegen_webhook_deliveries_total{outcome}                counter
//
// plus the Go runtime and process collectors. Counters are per process:
// a finish is counted where it is stored (the worker, or the API process
// for a cancel); sum them across processes. The queue gauges read the
// shared store, so every process reports the same values: aggregate
// them with max, not sum. A task failed by lease recovery (its workers
// kept dying) is counted, with its refund, by the process whose
// recovery failed it: tasks_finished_total{status="failed",
// error_code="internal"}, with no generation time. credits_charged_total
// counts the charges at submit and an operator's re-charges
// (Inspector.Retry with recharge).
package metrics

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/imagegen/imagegen"
)

// Config configures New.
type Config struct {
	// Registerer is where the metrics are registered (required), for
	// example a prometheus.NewRegistry() served by promhttp.HandlerFor.
	Registerer prometheus.Registerer
	// Queue, when set, is read on every scrape for the queue gauges
	// (usually the imagegen.Store).
	Queue QueueReader
	// QueueTimeout bounds that read (default 2s); on error or timeout
	// the gauges are left out of the scrape.
	QueueTimeout time.Duration
	// Scheduler, when set, is read on every scrape (within QueueTimeout)
	// for imagegen_tasks_waiting: the ready tasks that Limits (the
	// workers' caps and rates) hold back now (usually the
	// imagegen.Store).
	Scheduler SchedulerReader
	Limits    imagegen.Limits
	// NoRuntimeCollectors leaves out the Go and process collectors (when
	// the embedder registers its own on the same registry).
	NoRuntimeCollectors bool
}

// Metrics holds the metrics. It is an imagegen.Observer (of the service,
// the HTTP API and the callback dispatcher); it is safe for concurrent
// use.
type Metrics struct {
	submitted     *prometheus.CounterVec
	finished      *prometheus.CounterVec
	queueWait     prometheus.Histogram
	generation    prometheus.Histogram
	providerReqs  *prometheus.CounterVec
	fallbacks     *prometheus.CounterVec
	charged       prometheus.Counter
	refunded      prometheus.Counter
	httpRequests  *prometheus.CounterVec
	httpSeconds   *prometheus.HistogramVec
	rateLimited   prometheus.Counter
	webhookOutcms *prometheus.CounterVec
	// The children of submitted, httpRequests and httpSeconds already
	// looked up: a submit and a request are counted without hashing
	// their labels.
	submittedBy children[[2]string, prometheus.Counter]
	httpBy      children[httpKey, httpChild]
}

// httpKey and httpChild are an API answer's labels and its metrics.
type httpKey struct {
	route string
	code  int
}

type httpChild struct {
	requests prometheus.Counter
	seconds  prometheus.Observer
}

var _ imagegen.Observer = (*Metrics)(nil)

// New creates the metrics and registers them on c.Registerer.
func New(c Config) (*Metrics, error) {
	if c.Registerer == nil {
		return nil, errors.New("metrics: Config.Registerer is required")
	}
	m := &Metrics{
		submitted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "imagegen_tasks_submitted_total", Help: "Tasks created (and charged), by scene and model.",
		}, []string{"scene", "model"}),
		finished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "imagegen_tasks_finished_total", Help: "Tasks that reached success or failed, by model, status and error code.",
		}, []string{"model", "status", "error_code"}),
		queueWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "imagegen_task_queue_wait_seconds", Help: "How long tasks waited, ready, before a worker claimed them.",
			Buckets: []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600},
		}),
		generation: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "imagegen_task_generation_seconds", Help: "How long the finishing attempt of a task ran on its model.",
			Buckets: []float64{.1, .25, .5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300},
		}),
		providerReqs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "imagegen_provider_requests_total", Help: "Generation calls to providers, by provider and outcome.",
		}, []string{"provider", "outcome"}),
		fallbacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "imagegen_provider_fallbacks_total", Help: "Moves of a fallback chain from one model to the next.",
		}, []string{"from", "to"}),
		charged: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "imagegen_credits_charged_total", Help: "Credits charged for submitted tasks and operators' re-charged retries.",
		}),
		refunded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "imagegen_credits_refunded_total", Help: "Credits given back for failed and cancelled tasks.",
		}),
		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "imagegen_http_requests_total", Help: "API requests answered, by route pattern and status code.",
		}, []string{"route", "code"}),
		httpSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "imagegen_http_request_seconds", Help: "API request durations, by route pattern.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"route"}),
		rateLimited: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "imagegen_rate_limited_total", Help: "API requests refused with 429 (per-key or failed-authentication limit).",
		}),
		webhookOutcms: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "imagegen_webhook_deliveries_total", Help: "Callback delivery attempts, by outcome (delivered, retry, given_up, dropped, not_sent).",
		}, []string{"outcome"}),
	}
	cs := []prometheus.Collector{m.submitted, m.finished, m.queueWait, m.generation, m.providerReqs, m.fallbacks,
		m.charged, m.refunded, m.httpRequests, m.httpSeconds, m.rateLimited, m.webhookOutcms}
	if c.Queue != nil {
		cs = append(cs, newQueueCollector(c.Queue, c.QueueTimeout))
	}
	if c.Scheduler != nil {
		cs = append(cs, newWaitingCollector(c.Scheduler, c.Limits, c.QueueTimeout))
	}
	for _, col := range cs {
		if err := c.Registerer.Register(col); err != nil {
			return nil, fmt.Errorf("metrics: %w", err)
		}
	}
	if !c.NoRuntimeCollectors {
		for _, col := range []prometheus.Collector{
			collectors.NewGoCollector(),
			collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		} {
			var dup prometheus.AlreadyRegisteredError
			if err := c.Registerer.Register(col); err != nil && !errors.As(err, &dup) {
				return nil, fmt.Errorf("metrics: %w", err)
			}
		}
	}
	return m, nil
}

// TaskSubmitted counts a task and its charge at submit.
func (m *Metrics) TaskSubmitted(scene imagegen.Scene, model string, cost int64) {
	m.submittedBy.get([2]string{string(scene), model}, func() prometheus.Counter {
		return m.submitted.WithLabelValues(string(scene), model)
	}).Inc()
	m.charged.Add(float64(cost))
}

// TaskClaimed observes how long the task waited.
func (m *Metrics) TaskClaimed(_ string, queued time.Duration) {
	m.queueWait.Observe(queued.Seconds())
}

// TaskFinished counts a finished task and observes its generation time
// when it is known (not for a cancel, which ran no generation to its
// end, nor for a task failed by lease recovery, whose worker died).
func (m *Metrics) TaskFinished(model string, status imagegen.Status, code imagegen.ErrorCode, generation time.Duration) {
	m.finished.WithLabelValues(model, string(status), string(code)).Inc()
	if generation > 0 {
		m.generation.Observe(generation.Seconds())
	}
}

// CreditsRefunded counts refunded credits.
func (m *Metrics) CreditsRefunded(credits int64) { m.refunded.Add(float64(credits)) }

// CreditsCharged counts credits an operator charged again for a retry.
func (m *Metrics) CreditsCharged(credits int64) { m.charged.Add(float64(credits)) }

// ProviderRequest counts one provider call.
func (m *Metrics) ProviderRequest(provider, outcome string) {
	m.providerReqs.WithLabelValues(provider, outcome).Inc()
}

// Fallback counts a move along a fallback chain.
func (m *Metrics) Fallback(from, to string) { m.fallbacks.WithLabelValues(from, to).Inc() }

// HTTPRequest counts one API answer under its route pattern (never the
// raw path) and, for a 429, a rate-limited request.
func (m *Metrics) HTTPRequest(route string, code int, took time.Duration) {
	c := m.httpBy.get(httpKey{route, code}, func() httpChild {
		return httpChild{
			requests: m.httpRequests.WithLabelValues(route, statusText(code)),
			seconds:  m.httpSeconds.WithLabelValues(route),
		}
	})
	c.requests.Inc()
	c.seconds.Observe(took.Seconds())
	if code == 429 {
		m.rateLimited.Inc()
	}
}

// WebhookDelivery counts one callback delivery attempt's outcome.
func (m *Metrics) WebhookDelivery(outcome string) { m.webhookOutcms.WithLabelValues(outcome).Inc() }

// statusText is code as a label value, without an allocation for the
// common codes.
func statusText(code int) string {
	switch code {
	case 200:
		return "200"
	case 201:
		return "201"
	case 202:
		return "202"
	case 404:
		return "404"
	case 429:
		return "429"
	}
	return strconv.Itoa(code)
}
