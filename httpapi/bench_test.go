package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/google/uuid"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/httpapi"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/apitest"
	"github.com/imagegen/imagegen/metrics"
	"github.com/imagegen/imagegen/store/memory"
	"github.com/imagegen/imagegen/wire"
)

// The baseline: a bare net/http JSON handler that authenticates with a
// map lookup, decodes the body, and writes a comparable body.
type bareAPI struct {
	mu    sync.Mutex
	keys  map[string]string
	tasks map[string]string
	n     int
}

func (b *bareAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	owner, ok := b.keys[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
	b.mu.Unlock()
	if !ok {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if r.Method == http.MethodPost {
		var req imagegen.Request
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &req); err != nil {
			w.WriteHeader(http.StatusUnprocessableEntity)
			return
		}
		b.mu.Lock()
		b.n++
		id := "task-" + strconv.Itoa(b.n)
		b.tasks[id] = owner
		b.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(wire.Submitted{TaskID: id, Status: imagegen.StatusPending, CreditsUsed: 1, CreditsRemaining: 99})
		return
	}
	id := r.PathValue("id")
	b.mu.Lock()
	_, ok = b.tasks[id]
	b.mu.Unlock()
	if !ok {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	_ = json.NewEncoder(w).Encode(wire.TaskBody{TaskID: id, Status: imagegen.StatusPending})
}

const benchKey = "bench-key-0123456789abcdef"

// newBenchAPI is the API on the memory store; withMetrics counts every
// request, submit and charge in Prometheus metrics (package metrics) on a
// registry of its own. Logs are discarded either way.
func newBenchAPI(b *testing.B, withMetrics bool) (http.Handler, *imagegen.Service) {
	clock := imagegentest.NewClock(time.Time{})
	store := memory.New(memory.Config{Clock: clock})
	var obs imagegen.Observer
	if withMetrics {
		m, err := metrics.New(metrics.Config{Registerer: prometheus.NewRegistry(), Queue: store})
		if err != nil {
			b.Fatal(err)
		}
		obs = m
	}
	s := apitest.New(b, apitest.Config{
		Clock: clock, Store: store, Model: imagegentest.NewModel(1), Limit: 1 << 30,
		Service: func(c *imagegen.Config) { c.Observer = obs },
		API:     func(c *httpapi.Config) { c.Observer = obs },
	})
	if _, err := s.Service.ImportKey(context.Background(), "bench", benchKey); err != nil {
		b.Fatal(err)
	}
	if _, err := s.Service.Grant(context.Background(), "bench", 1<<50, uuid.NewString()); err != nil {
		b.Fatal(err)
	}
	return s.Mux, s.Service
}

func newBare() *bareAPI {
	return &bareAPI{keys: map[string]string{benchKey: "bench"}, tasks: map[string]string{}}
}

// mux routes like httpapi does, so both pay for net/http's routing.
func (b *bareAPI) mux() http.Handler {
	m := http.NewServeMux()
	m.Handle("POST /api/v1/generate", b)
	m.Handle("GET /api/v1/tasks/{id}", b)
	return m
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

// apiVariants are the API without and with metrics.
var apiVariants = []struct {
	name    string
	metrics bool
}{
	{"httpapi", false},
	{"httpapi+metrics", true},
}

// BenchmarkSubmit compares POST /generate through httpapi on the memory
// store (without and with metrics) with the bare handler (target: at
// least 0.8x), over loopback HTTP and in process.
func BenchmarkSubmit(b *testing.B) {
	for _, tr := range transports {
		for _, v := range apiVariants {
			b.Run(tr.name+"/"+v.name, func(b *testing.B) {
				h, _ := newBenchAPI(b, v.metrics)
				run(b, tr.make(b, h), "POST", "/api/v1/generate", benchBody, http.StatusCreated)
			})
		}
		b.Run(tr.name+"/bare", func(b *testing.B) {
			run(b, tr.make(b, newBare().mux()), "POST", "/api/v1/generate", benchBody, http.StatusCreated)
		})
	}
}

// BenchmarkPoll compares GET /tasks/{id} the same way.
func BenchmarkPoll(b *testing.B) {
	for _, tr := range transports {
		for _, v := range apiVariants {
			b.Run(tr.name+"/"+v.name, func(b *testing.B) {
				h, svc := newBenchAPI(b, v.metrics)
				sub, err := svc.Submit(context.Background(), "bench", imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "x"})
				if err != nil {
					b.Fatal(err)
				}
				run(b, tr.make(b, h), "GET", "/api/v1/tasks/"+sub.TaskID, "", http.StatusOK)
			})
		}
		b.Run(tr.name+"/bare", func(b *testing.B) {
			bare := newBare()
			bare.tasks["task-1"] = "bench"
			run(b, tr.make(b, bare.mux()), "GET", "/api/v1/tasks/task-1", "", http.StatusOK)
		})
	}
}
