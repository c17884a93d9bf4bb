package metrics_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/metrics"
)

// BenchmarkSubmitHooks is what metrics add to one API submit: the
// request's count and duration, and the task's count and charge. Compare
// it with BenchmarkSubmit in httpapi (a whole submit).
func BenchmarkSubmitHooks(b *testing.B) {
	benchHooks(b, func(m *metrics.Metrics) {
		m.HTTPRequest("POST /api/v1/generate", 201, 3*time.Millisecond)
		m.TaskSubmitted(imagegen.SceneTextToImage, "placeholder", 1)
	})
}

// BenchmarkPollHooks is what metrics add to one poll.
func BenchmarkPollHooks(b *testing.B) {
	benchHooks(b, func(m *metrics.Metrics) {
		m.HTTPRequest("GET /api/v1/tasks/{task_id}", 200, time.Millisecond)
	})
}

// benchHooks runs hooks on fresh metrics from parallel goroutines.
func benchHooks(b *testing.B, hooks func(*metrics.Metrics)) {
	m, err := metrics.New(metrics.Config{Registerer: prometheus.NewRegistry(), NoRuntimeCollectors: true})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			hooks(m)
		}
	})
}
