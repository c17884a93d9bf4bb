package metrics_test

import (
	"bufio"
	"context"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/metrics"
	"github.com/imagegen/imagegen/model/placeholder"
	"github.com/imagegen/imagegen/store/memory"
)

// The metrics of a service, on a registry of the app's own, served for
// Prometheus. The same *Metrics is the Observer of httpapi.Config and
// webhook.Config (server.New passes the service's Observer to both).
func Example() {
	ctx := context.Background()
	store, err := memory.New(memory.Config{})
	if err != nil {
		log.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	m, err := metrics.New(metrics.Config{Registerer: reg, Queue: store})
	if err != nil {
		log.Fatal(err)
	}
	model, err := placeholder.New(placeholder.Config{})
	if err != nil {
		log.Fatal(err)
	}
	svc, err := imagegen.New(imagegen.Config{Store: store, Model: model, Observer: m, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := svc.Grant(ctx, "alice", 5, "signup"); err != nil {
		log.Fatal(err)
	}
	if _, err := svc.Submit(ctx, "alice", imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "a lighthouse"}); err != nil {
		log.Fatal(err)
	}

	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{})) // mount on your admin mux
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "imagegen_tasks_submitted_total") || strings.HasPrefix(line, "imagegen_queue_depth") {
			fmt.Println(line)
		}
	}
	// Output:
	// imagegen_queue_depth{status="pending"} 1
	// imagegen_queue_depth{status="processing"} 0
	// imagegen_tasks_submitted_total{model="placeholder",scene="text-to-image"} 1
}
