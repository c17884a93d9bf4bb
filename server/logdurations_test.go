package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/server"
	"github.com/imagegen/imagegen/store/memory"
)

// The library writes durations in its log lines as Go duration strings
// ("1.5ms", README "Logs"), whatever handler the embedder gives it: a
// submit, a long poll and a task that the worker retries (the provider
// asked to wait) and then completes, logged at debug level through
// slog's own JSON handler, give no attribute of kind Duration (which
// that handler writes as integer nanoseconds), and the duration fields
// of the request, claim, pause and retry lines parse as durations.
func TestLogLinesCarryDurationsAsStrings(t *testing.T) {
	var out bytes.Buffer
	spy := &durationSpy{next: slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}), mu: &sync.Mutex{}}
	busy := &imagegen.ModelError{Provider: "test", Retryable: true, Message: "rate limited", RetryAfter: 10 * time.Millisecond}
	ctx, stop := context.WithCancel(context.Background())
	srv, err := server.New(ctx, server.Config{
		Service: imagegen.Config{
			Store: testenv.Memory(t, memory.Config{}), Model: imagegentest.NewModel(1, imagegentest.Fail(busy), imagegentest.Succeed()),
			Logger:       slog.New(spy),
			WorkerConfig: imagegen.WorkerConfig{Workers: 1, RetryBackoff: time.Millisecond, PollInterval: 5 * time.Millisecond},
		},
		PublicURL: "https://img.example.com",
	})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan struct{})
	go func() { defer close(ran); _ = srv.Run(ctx) }()
	defer func() { stop(); <-ran }()
	key, _, err := srv.Service().CreateKey(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Service().Grant(ctx, "alice", 5, "signup"); err != nil {
		t.Fatal(err)
	}

	w := do(t, srv, "POST", "/api/v1/generate", key, `{"scene":"text-to-image","prompt":"a kite"}`)
	var sub struct {
		TaskID string `json:"task_id"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &sub); w.Code != http.StatusCreated || err != nil {
		t.Fatalf("submit: %d %s", w.Code, w.Body)
	}
	var task struct {
		Status string `json:"status"`
	}
	testenv.EventuallyNoError(t, 20*time.Second, "the task to succeed", func() error {
		r := httptest.NewRequest("GET", "/api/v1/tasks/"+sub.TaskID, nil)
		r.Header.Set("Authorization", "Bearer "+key)
		r.Header.Set("Prefer", "wait=5") // a long poll
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, r)
		if err := json.Unmarshal(w.Body.Bytes(), &task); err != nil {
			return err
		}
		if task.Status != "success" {
			return fmt.Errorf("status %s", task.Status)
		}
		return nil
	})
	stop()
	<-ran

	spy.mu.Lock()
	defer spy.mu.Unlock()
	if len(spy.durations) > 0 {
		t.Errorf("attributes of kind Duration (written as integer nanoseconds by a JSON handler): %s", strings.Join(spy.durations, ", "))
	}
	// The lines that carry a duration carry it as a string.
	want := map[string]string{"request": "duration", "task claimed": "queued", "model paused for every worker: the provider asked to wait": "pause",
		"task will be retried": "delay", "waiting for the task to end": "wait"}
	seen := map[string]bool{}
	for sc := bufio.NewScanner(&out); sc.Scan(); {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("a log line that is not JSON: %s", sc.Text())
		}
		msg, _ := line["msg"].(string)
		field, ok := want[msg]
		if !ok {
			continue
		}
		seen[msg] = true
		s, isString := line[field].(string)
		if _, err := time.ParseDuration(s); !isString || err != nil {
			t.Errorf("%q: %s is %v (%T), not a duration string: %s", msg, field, line[field], line[field], sc.Text())
		}
	}
	for msg := range want {
		if !seen[msg] {
			t.Errorf("no %q line in the run's log:\n%s", msg, out.String())
		}
	}
}

// durationSpy is a slog.Handler that notes every attribute of kind
// Duration that reaches it (in a record, in With's attributes, in a
// group), then hands the record on.
type durationSpy struct {
	next      slog.Handler
	mu        *sync.Mutex
	durations []string // "message: key"
	shared    *durationSpy
}

func (h *durationSpy) root() *durationSpy {
	if h.shared != nil {
		return h.shared
	}
	return h
}

func (h *durationSpy) note(where string, a slog.Attr) {
	switch a.Value.Kind() {
	case slog.KindDuration:
		r := h.root()
		r.mu.Lock()
		r.durations = append(r.durations, where+": "+a.Key)
		r.mu.Unlock()
	case slog.KindGroup:
		for _, g := range a.Value.Group() {
			h.note(where, g)
		}
	case slog.KindLogValuer:
		h.note(where, slog.Attr{Key: a.Key, Value: a.Value.Resolve()})
	}
}

func (h *durationSpy) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *durationSpy) Handle(ctx context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool { h.note(r.Message, a); return true })
	return h.next.Handle(ctx, r)
}

func (h *durationSpy) WithAttrs(attrs []slog.Attr) slog.Handler {
	for _, a := range attrs {
		h.note("With", a)
	}
	return &durationSpy{next: h.next.WithAttrs(attrs), shared: h.root()}
}

func (h *durationSpy) WithGroup(name string) slog.Handler {
	return &durationSpy{next: h.next.WithGroup(name), shared: h.root()}
}
