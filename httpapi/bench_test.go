package httpapi_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/google/uuid"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/barehttp"
	"github.com/imagegen/imagegen/internal/logbuf"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/internal/testenv/apitest"
	"github.com/imagegen/imagegen/metrics"
	"github.com/imagegen/imagegen/server"
	"github.com/imagegen/imagegen/store/memory"
)

const benchKey = "bench-key-0123456789abcdef"

// newBenchAPI is the API on the memory store, with logs discarded and
// no metrics.
func newBenchAPI(b *testing.B) (http.Handler, *imagegen.Service) {
	clock := imagegentest.NewClock(time.Time{})
	s := apitest.New(b, apitest.Config{Clock: clock, Model: imagegentest.NewModel(1), Limit: 1 << 30,
		Service: func(c *imagegen.Config) { c.MaxPending = -1 }}) // no workers run: the tasks stay pending
	return s.Mux, benchUser(b, s.Service)
}

// newBenchServe is the stack that `imagegen serve` runs (server.New) on
// the memory store with serve's defaults: the system clock, a request
// log line at info level for every request (slog's text format through
// the same handler and buffered writer, to a file), Prometheus metrics on every
// request, submit and charge, request ids; the rate limit and the cap on
// pending tasks are set out of reach, as for a load test (no workers run).
func newBenchServe(b *testing.B) (http.Handler, *imagegen.Service) {
	f, err := os.CreateTemp(b.TempDir(), "serve.log")
	if err != nil {
		b.Fatal(err)
	}
	logs := logbuf.New(f, logbuf.Config{})
	b.Cleanup(func() { _ = logs.Close(); _ = f.Close() })
	log := slog.New(logbuf.Handler(logbuf.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}), logs))
	store := testenv.Memory(b, memory.Config{})
	m, err := metrics.New(metrics.Config{Registerer: prometheus.NewRegistry(), Queue: store})
	if err != nil {
		b.Fatal(err)
	}
	srv, err := server.New(b.Context(), server.Config{
		Service:   imagegen.Config{Store: store, Model: imagegentest.NewModel(1), Logger: log, Observer: m, MaxPending: -1},
		PublicURL: "http://127.0.0.1:8080",
		RateLimit: 1 << 30,
	})
	if err != nil {
		b.Fatal(err)
	}
	mux := http.NewServeMux()
	srv.Register(mux)
	return mux, benchUser(b, srv.Service())
}

// benchUser gives the bench key to the user "bench", with credits out of
// reach.
func benchUser(b *testing.B, svc *imagegen.Service) *imagegen.Service {
	if _, err := svc.ImportKey(context.Background(), "bench", benchKey); err != nil {
		b.Fatal(err)
	}
	if _, err := svc.Grant(context.Background(), "bench", 1<<50, uuid.NewString()); err != nil {
		b.Fatal(err)
	}
	return svc
}

const benchBody = `{"scene":"text-to-image","prompt":"a lighthouse at dusk, oil painting","aspect_ratio":"16:9"}`

// A request maker: in process through a recorder, or over loopback HTTP.
type doFunc func(method, path, body string) int

func inProcess(h http.Handler) doFunc {
	return func(method, path, body string) int {
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		r := httptest.NewRequest(method, path, rd)
		r.Header.Set("Authorization", "Bearer "+benchKey)
		if body != "" {
			r.Header.Set("Content-Type", "application/json")
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
}

// overLoopback serves h on 127.0.0.1 and sends requests with keep-alive
// connections, as a real client would.
func overLoopback(b *testing.B, h http.Handler) doFunc {
	srv := httptest.NewServer(h)
	b.Cleanup(srv.Close)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	b.Cleanup(client.CloseIdleConnections)
	return func(method, path, body string) int {
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		r, err := http.NewRequest(method, srv.URL+path, rd)
		if err != nil {
			b.Fatal(err)
		}
		r.Header.Set("Authorization", "Bearer "+benchKey)
		if body != "" {
			r.Header.Set("Content-Type", "application/json")
		}
		resp, err := client.Do(r)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
}

func run(b *testing.B, do doFunc, method, path, body string, want int) {
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if code := do(method, path, body); code != want {
				b.Fatalf("status %d, want %d", code, want)
			}
		}
	})
}

// transports names the two ways a benchmark reaches a handler.
var transports = []struct {
	name string
	make func(*testing.B, http.Handler) doFunc
}{
	{"loopback", overLoopback},
	{"inprocess", func(_ *testing.B, h http.Handler) doFunc { return inProcess(h) }},
}

// variants are the handlers compared: the API alone, serve's whole
// stack, and the bare baseline.
var variants = []struct {
	name string
	make func(*testing.B) (http.Handler, *imagegen.Service)
}{
	{"httpapi", newBenchAPI},
	{"serve", newBenchServe},
	{"bare", newBenchBare},
}

// newBenchBare is the baseline (package barehttp), whose task to poll
// is barehttp.PollTask; it has no Service.
func newBenchBare(*testing.B) (http.Handler, *imagegen.Service) {
	return barehttp.New(benchKey, "bench").Mux("/api/v1"), nil
}

// BenchmarkSubmit compares POST /generate through httpapi on the memory
// store, through serve's stack (logs and metrics on) and through the
// bare handler (target: serve at least 0.9x bare's rate), over loopback
// HTTP and in process.
func BenchmarkSubmit(b *testing.B) {
	for _, tr := range transports {
		for _, v := range variants {
			b.Run(tr.name+"/"+v.name, func(b *testing.B) {
				h, _ := v.make(b)
				run(b, tr.make(b, h), "POST", "/api/v1/generate", benchBody, http.StatusCreated)
			})
		}
	}
}

// BenchmarkPoll compares GET /tasks/{id} the same way.
func BenchmarkPoll(b *testing.B) {
	for _, tr := range transports {
		for _, v := range variants {
			b.Run(tr.name+"/"+v.name, func(b *testing.B) {
				h, svc := v.make(b)
				id := barehttp.PollTask
				if svc != nil {
					sub, err := svc.Submit(context.Background(), "bench", imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "x"})
					if err != nil {
						b.Fatal(err)
					}
					id = sub.TaskID
				}
				run(b, tr.make(b, h), "GET", "/api/v1/tasks/"+id, "", http.StatusOK)
			})
		}
	}
}
