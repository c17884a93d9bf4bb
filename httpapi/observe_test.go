package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/httpapi"
)

// seen is an Observer that records each answer.
type seen struct {
	imagegen.NopObserver
	mu    sync.Mutex
	calls []string
}

func (s *seen) HTTPRequest(route string, code int, took time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, route+" "+http.StatusText(code))
}

// syncBuf is a bytes.Buffer for logs.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuf) Write(p []byte) (int, error) { b.mu.Lock(); defer b.mu.Unlock(); return b.b.Write(p) }

func (b *syncBuf) lines(t *testing.T) []map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b.b.Bytes()))
	for sc.Scan() {
		var m map[string]any
		is.New(t).NoErr(json.Unmarshal(sc.Bytes(), &m))
		out = append(out, m)
	}
	return out
}

// TestEachRequestIsLoggedAndObservedByRoute, with the routes registered
// on the app's mux (Register) and with the Handler mounted under its
// prefix: the same lines and routes either way.
func TestEachRequestIsLoggedAndObservedByRoute(t *testing.T) {
	for _, mounted := range []bool{false, true} {
		t.Run(map[bool]string{false: "registered", true: "mounted"}[mounted], func(t *testing.T) {
			testLoggedAndObserved(t, mounted)
		})
	}
}

func testLoggedAndObserved(t *testing.T, mounted bool) {
	is := is.New(t)
	obs, logs := &seen{}, &syncBuf{}
	e := newEnv(t, func(o *envOptions) {
		o.limit = 3
		o.observer = obs
		o.logger = slog.New(slog.NewJSONHandler(logs, nil))
		o.mounted = mounted
	})
	w := e.submit(e.key, `{"scene":"text-to-image","prompt":"a fox"}`)
	is.Equal(w.Code, http.StatusCreated)
	var sub struct {
		TaskID string `json:"task_id"`
	}
	is.NoErr(json.Unmarshal(w.Body.Bytes(), &sub))
	is.Equal(e.poll(e.key, sub.TaskID).Code, http.StatusOK)
	is.Equal(e.poll(e.key, "some-other-id").Code, http.StatusNotFound)
	is.Equal(e.poll(e.key, sub.TaskID).Code, http.StatusTooManyRequests)
	is.Equal(e.do("GET", "/api/v1/nothing/here", "", "").Code, http.StatusNotFound)

	is.Equal(obs.calls, []string{
		"POST /api/v1/generate Created",
		"GET /api/v1/tasks/{task_id} OK",
		"GET /api/v1/tasks/{task_id} Not Found",
		"GET /api/v1/tasks/{task_id} Too Many Requests",
		"/api/v1/ Not Found",
	}) // patterns, never raw paths or ids

	lines := logs.lines(t)
	is.Equal(len(lines), 5) // one line per request
	keyIDs := map[string]bool{}
	for _, l := range lines {
		is.Equal(l["msg"], "request")
		is.True(l["request_id"] != "")
		is.True(!strings.Contains(l["route"].(string), sub.TaskID))
		if id, _ := l["key_id"].(string); id != "" {
			keyIDs[id] = true
			is.True(len(id) == 12 && !strings.Contains(e.key, id)) // short, and not a piece of the key
		}
	}
	is.Equal(len(keyIDs), 1) // one caller, one key id
	is.Equal(lines[0]["method"], "POST")
	is.Equal(lines[0]["route"], "/api/v1/generate") // the pattern, its method apart
	is.Equal(lines[4]["route"], "/api/v1/")
	is.Equal(lines[0]["status"], 201.0)
	is.Equal(lines[4]["key_id"], "") // not authenticated
}

// A request's line is timed when the request ended: no earlier than the
// request was sent, no later than its answer came back (the line's time
// is worked out from the request's start and its duration).
func TestARequestLineIsTimedWithinTheRequest(t *testing.T) {
	is := is.New(t)
	logs := &syncBuf{}
	e := newEnv(t, func(o *envOptions) { o.logger = slog.New(slog.NewJSONHandler(logs, nil)) })
	sent := time.Now().Round(0) // the wall clock only, as the line's time is read back
	is.Equal(e.poll(e.key, "some-id").Code, http.StatusNotFound)
	back := time.Now().Round(0)
	lines := logs.lines(t)
	is.Equal(len(lines), 1)
	at, err := time.Parse(time.RFC3339Nano, lines[0]["time"].(string))
	is.NoErr(err)
	is.True(!at.Before(sent) && !at.After(back)) // the line's time is within the request
}

func TestRequestIDIsKeptWhenValidAndMadeOtherwise(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	w := e.do("GET", "/api/v1/credits", e.key, "", httpapi.RequestIDHeader, "trace-42.a_b:c")
	is.Equal(w.Header().Get(httpapi.RequestIDHeader), "trace-42.a_b:c")
	for _, bad := range []string{"has space", "quote\"", strings.Repeat("x", 129), "new\nline"} {
		w = e.do("GET", "/api/v1/credits", e.key, "", "X-Request-Id", bad)
		got := w.Header().Get("X-Request-Id")
		is.True(got != bad && len(got) == 32) // replaced by a fresh id
	}
	a := e.do("GET", "/api/v1/credits", e.key, "").Header().Get("X-Request-Id")
	b := e.do("GET", "/api/v1/credits", e.key, "").Header().Get("X-Request-Id")
	is.True(a != b && a != "")
}

// A submit is logged once at info: its request line carries the task
// (task_id, model, cost) beside the request id, and the service writes no
// "task submitted" line of its own. With the API's request log off at
// info, the service's line stays.
func TestASubmitIsLoggedOnItsRequestLine(t *testing.T) {
	is := is.New(t)
	logs := &syncBuf{}
	log := slog.New(slog.NewJSONHandler(logs, nil))
	e := newEnv(t, func(o *envOptions) {
		o.logger = log
		o.service = func(c *imagegen.Config) { c.Logger = log }
	})
	w := e.submit(e.key, `{"scene":"text-to-image","prompt":"a fox"}`)
	is.Equal(w.Code, http.StatusCreated)
	var sub struct {
		TaskID      string `json:"task_id"`
		CreditsUsed int64  `json:"credits_used"`
	}
	is.NoErr(json.Unmarshal(w.Body.Bytes(), &sub))
	lines := logs.lines(t)
	is.Equal(len(lines), 1) // the request line alone
	l := lines[0]
	is.Equal(l["msg"], "request")
	is.Equal(l["task_id"], sub.TaskID)
	is.Equal(l["cost"], float64(sub.CreditsUsed))
	task, err := e.svc.Task(context.Background(), "alice", sub.TaskID)
	is.NoErr(err)
	is.Equal(l["model"], task.Model)
	is.Equal(l["request_id"], w.Header().Get(httpapi.RequestIDHeader))

	// A poll's line names no task of its own.
	is.Equal(e.poll(e.key, sub.TaskID).Code, http.StatusOK)
	_, ok := logs.lines(t)[1]["task_id"]
	is.True(!ok)

	svcLogs := &syncBuf{}
	e = newEnv(t, func(o *envOptions) { // the API quiet, the service not
		o.service = func(c *imagegen.Config) { c.Logger = slog.New(slog.NewJSONHandler(svcLogs, nil)) }
	})
	w = e.submit(e.key, `{"scene":"text-to-image","prompt":"a fox"}`)
	is.Equal(w.Code, http.StatusCreated)
	lines = svcLogs.lines(t)
	is.Equal(len(lines), 1)
	is.Equal(lines[0]["msg"], "task submitted")
	is.Equal(lines[0]["request_id"], w.Header().Get(httpapi.RequestIDHeader))
}
