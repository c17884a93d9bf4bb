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
