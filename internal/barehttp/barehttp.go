// Package barehttp is the baseline that the HTTP API's speed is measured
// against: a bare net/http JSON handler for submit and poll that
// authenticates with a map lookup, decodes the body and writes a body of
// the API's shape, with none of the API's work (hashed keys, rate
// limits, credits, request ids, logs, metrics). httpapi's benchmarks
// serve it beside the API in the same run, and the bench module's
// barehttp command serves it for wrk.
package barehttp

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/google/uuid"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/wire"
)

// Handler answers POST {prefix}/generate and GET {prefix}/tasks/{id}.
type Handler struct {
	mu    sync.Mutex
	keys  map[string]string // API key → owner
	tasks map[string]string // task id → owner
}

// New returns a handler that knows one API key, of owner, and one
// pending task of theirs, PollTask.
func New(key, owner string) *Handler {
	return &Handler{keys: map[string]string{key: owner}, tasks: map[string]string{PollTask: owner}}
}

// PollTask is the id of the pending task that New makes, for polls: a
// UUID, as the API's task ids are.
const PollTask = "0b6e8f3c-6d2a-4c1e-9f4b-2a7d5e8c1f30"

// Mux routes the two endpoints under prefix (such as "/api/v1") the way
// the API does, so that both pay for net/http's routing.
func (b *Handler) Mux(prefix string) *http.ServeMux {
	m := http.NewServeMux()
	m.Handle("POST "+prefix+"/generate", b)
	m.Handle("GET "+prefix+"/tasks/{task_id}", b)
	return m
}

// taskBody is the poll answer's shape (httpapi.TaskBody of a pending task).
type taskBody struct {
	TaskID string          `json:"task_id"`
	Status imagegen.Status `json:"status"`
}

// ServeHTTP serves a submit (POST) or a poll (any other method).
func (b *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
		id := uuid.NewString() // the API's task ids, so that the bodies are the same size
		b.mu.Lock()
		b.tasks[id] = owner
		b.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(wire.Submitted{TaskID: id, Status: imagegen.StatusPending, CreditsUsed: 1, CreditsRemaining: 99})
		return
	}
	id := r.PathValue("task_id")
	b.mu.Lock()
	_, ok = b.tasks[id]
	b.mu.Unlock()
	if !ok {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	_ = json.NewEncoder(w).Encode(taskBody{TaskID: id, Status: imagegen.StatusPending})
}
