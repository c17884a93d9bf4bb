package metrics

import (
	"cmp"
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/imagegen/imagegen"
)

// QueueReader reads the queue's state; every imagegen.Store is one.
type QueueReader interface {
	QueueStats(ctx context.Context) (imagegen.QueueStats, error)
}

// queueCollector reads the queue gauges from the store at each scrape,
// so they are right whichever process changed the queue.
type queueCollector struct {
	queue   QueueReader
	timeout time.Duration
	depth   *prometheus.Desc
	oldest  *prometheus.Desc
}

func newQueueCollector(q QueueReader, timeout time.Duration) *queueCollector {
	return &queueCollector{
		queue:   q,
		timeout: cmp.Or(timeout, 2*time.Second),
		depth: prometheus.NewDesc("imagegen_queue_depth",
			"Tasks in the queue, by status (pending: ready or waiting out a retry delay; processing: leased).", []string{"status"}, nil),
		oldest: prometheus.NewDesc("imagegen_queue_oldest_pending_seconds",
			"How long the oldest ready pending task has waited (0 when none is ready).", nil, nil),
	}
}

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.depth
	ch <- c.oldest
}

// Collect reads the store; if it cannot, the gauges are left out of
// this scrape (their absence is what an alert on them should catch).
func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	st, err := c.queue.QueueStats(ctx)
	if err != nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.depth, prometheus.GaugeValue, float64(st.Pending), string(imagegen.StatusPending))
	ch <- prometheus.MustNewConstMetric(c.depth, prometheus.GaugeValue, float64(st.Processing), string(imagegen.StatusProcessing))
	ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, st.OldestPending.Seconds())
}

// SchedulerReader reads what the scheduler holds back; every
// imagegen.Store is one.
type SchedulerReader interface {
	SchedulerStats(ctx context.Context, l imagegen.Limits) (imagegen.SchedulerStats, error)
}

// waitingCollector reads imagegen_tasks_waiting from the store at each
// scrape: ready tasks held back by a cap or a rate, by reason (no owner
// labels; an estimate on a queue longer than imagegen.SchedulerScan).
type waitingCollector struct {
	sched   SchedulerReader
	limits  imagegen.Limits
	timeout time.Duration
	waiting *prometheus.Desc
}

func newWaitingCollector(s SchedulerReader, l imagegen.Limits, timeout time.Duration) *waitingCollector {
	return &waitingCollector{
		sched: s, limits: l, timeout: cmp.Or(timeout, 2*time.Second),
		waiting: prometheus.NewDesc("imagegen_tasks_waiting",
			"Ready tasks held back now by a cap or a rate, by reason: owner_cap, model_cap, model_rate (a rate, or a pause after a provider's 429).",
			[]string{"reason"}, nil),
	}
}

func (c *waitingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.waiting }

func (c *waitingCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	st, err := c.sched.SchedulerStats(ctx, c.limits)
	if err != nil {
		return
	}
	for _, why := range imagegen.HoldReasons() {
		ch <- prometheus.MustNewConstMetric(c.waiting, prometheus.GaugeValue, float64(st.Held[why]), string(why))
	}
}
