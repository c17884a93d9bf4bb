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

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/httpapi"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/ratelimit"
	"github.com/imagegen/imagegen/store/memory"
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
		_ = json.NewEncoder(w).Encode(imagegen.Submitted{TaskID: id, Status: imagegen.StatusPending, CreditsUsed: 1, CreditsRemaining: 99})
		return
	}
	id := strings.TrimPrefix(r.URL.Path, "/api/v1/tasks/")
	b.mu.Lock()
	_, ok = b.tasks[id]
	b.mu.Unlock()
	if !ok {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	_ = json.NewEncoder(w).Encode(httpapi.TaskBody{TaskID: id, Status: imagegen.StatusPending})
}

const benchKey = "bench-key-0123456789abcdef"

func newBenchAPI(b *testing.B) (http.Handler, *imagegen.Service) {
	clock := imagegentest.NewClock(time.Time{})
	svc, err := imagegen.New(imagegen.Config{
		Store: memory.New(memory.Options{Clock: clock}), Model: imagegentest.NewModel(1), Clock: clock,
	})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := svc.ImportKey(context.Background(), "bench", benchKey); err != nil {
		b.Fatal(err)
	}
	if _, err := svc.Grant(context.Background(), "bench", 1<<50, ""); err != nil {
		b.Fatal(err)
	}
	limiter, err := ratelimit.NewMemory(ratelimit.Config{Limit: 1 << 30, Clock: clock})
	if err != nil {
		b.Fatal(err)
	}
	api, err := httpapi.New(httpapi.Config{Service: svc, Limiter: limiter, Clock: clock})
	if err != nil {
		b.Fatal(err)
	}
	mux := http.NewServeMux()
	api.Register(mux)
	return mux, svc
}

func newBare() *bareAPI {
	return &bareAPI{keys: map[string]string{benchKey: "bench"}, tasks: map[string]string{}}
}

const benchBody = `{"scene":"text-to-image","prompt":"a lighthouse at dusk, oil painting","aspect_ratio":"16:9"}`

func benchSubmit(b *testing.B, h http.Handler) {
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r := httptest.NewRequest("POST", "/api/v1/generate", strings.NewReader(benchBody))
			r.Header.Set("Authorization", "Bearer "+benchKey)
			r.Header.Set("Content-Type", "application/json")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != http.StatusCreated {
				b.Fatalf("status %d: %s", w.Code, w.Body)
			}
		}
	})
}

func benchPoll(b *testing.B, h http.Handler, id string) {
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r := httptest.NewRequest("GET", "/api/v1/tasks/"+id, nil)
			r.Header.Set("Authorization", "Bearer "+benchKey)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != http.StatusOK {
				b.Fatalf("status %d: %s", w.Code, w.Body)
			}
		}
	})
}

// BenchmarkSubmit compares POST /generate through httpapi on the memory
// store with the bare handler (DESIGN.md target: at least 0.8x).
func BenchmarkSubmit(b *testing.B) {
	b.Run("httpapi", func(b *testing.B) {
		h, _ := newBenchAPI(b)
		benchSubmit(b, h)
	})
	b.Run("bare", func(b *testing.B) { benchSubmit(b, newBare()) })
}

// BenchmarkPoll compares GET /tasks/{id} the same way.
func BenchmarkPoll(b *testing.B) {
	b.Run("httpapi", func(b *testing.B) {
		h, svc := newBenchAPI(b)
		sub, err := svc.Submit(context.Background(), "bench", imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "x"})
		if err != nil {
			b.Fatal(err)
		}
		benchPoll(b, h, sub.TaskID)
	})
	b.Run("bare", func(b *testing.B) {
		bare := newBare()
		bare.tasks["task-1"] = "bench"
		benchPoll(b, bare, "task-1")
	})
}
