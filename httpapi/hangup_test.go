package httpapi_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/httpapi"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/store/memory"
)

// A client that hangs up during a long poll (an HTTP client's timeout
// shorter than its Prefer: wait, the usual case) made the API log
// "request failed" at error level and answer, and count, a 500: the
// server's fault in every dashboard and alert, caused at will by any
// client. It is 499 (client closed request), logged only on the
// request's line, as nginx counts it.
func TestHungUpLongPollIsNotAServerError(t *testing.T) {
	is := is.New(t)
	obs, logs := &seen{}, &syncBuf{}
	e := newEnv(t, func(o *envOptions) {
		o.observer = obs
		o.logger = slog.New(slog.NewJSONHandler(logs, nil))
	})
	id := e.submitted()
	ctx, hangUp := context.WithCancel(context.Background())
	defer hangUp()
	got := startWaiting(t, e.clock, func() *httptest.ResponseRecorder {
		return doOn(within(ctx, e.h), "GET", "/api/v1/tasks/"+id, e.key, "", "Prefer", "wait=30")
	})
	hangUp()
	w := <-got
	is.Equal(w.Code, 499)
	is.Equal(w.Body.Len(), 0)                                             // nobody reads it
	is.Equal(obs.calls[len(obs.calls)-1], "GET /api/v1/tasks/{task_id} ") // 499 has no status text
	for _, l := range logs.lines(t) {
		if l["level"] == "ERROR" {
			t.Errorf("a hung-up client logged an error: %v", l)
		}
		if l["msg"] == "request" && l["route"] == "/api/v1/tasks/{task_id}" {
			is.Equal(l["status"], float64(499))
		}
	}
}

// A caller of the OpenAI-compatible endpoint that hangs up while its
// task waits in the queue gets it cancelled and refunded (it has no task
// to come back to; one hung up on once its generation had begun keeps
// its charge: TestOpenAIHangUpDuringGenerationKeepsTheCharge), and the
// request's line and the Observer say 499: they said 200, a success,
// for an answer nobody got.
func TestHungUpOpenAIRequestIsCancelledAndNotASuccess(t *testing.T) {
	is := is.New(t)
	obs := &seen{}
	e := newEnv(t, func(o *envOptions) {
		o.openAI, o.observer = true, obs
		o.api = func(c *httpapi.Config) { c.OpenAIWait = 30 * time.Second }
	})
	before := e.credits()
	ctx, hangUp := context.WithCancel(context.Background())
	defer hangUp()
	got := startWaiting(t, e.clock, func() *httptest.ResponseRecorder {
		return doOn(within(ctx, e.h), "POST", "/v1/images/generations", e.key, `{"prompt":"a red fox"}`)
	})
	hangUp()
	w := <-got
	is.Equal(w.Code, 499)
	is.Equal(obs.calls[len(obs.calls)-1], "POST /v1/images/generations ") // 499 has no status text
	is.Equal(e.credits(), before)                                         // cancelled while pending, refunded
}

// A download whose client hangs up while the image store is slow to
// answer was logged as "image store failed" and counted as a 503
// storage_unavailable: a store outage in every dashboard, made by any
// holder of an image link. It is a 499 too, and the store's lines are
// left for the store's own failures.
func TestHungUpDownloadIsNotAStoreFailure(t *testing.T) {
	is := is.New(t)
	blobs := newOutageBlobs()
	t.Cleanup(func() { close(blobs.release) })
	obs, logs := &seen{}, &syncBuf{}
	e := newEnv(t, func(o *envOptions) {
		o.store = testenv.Memory(t, memory.Config{Retention: retention, Blobs: blobs})
		o.service = func(c *imagegen.Config) { c.BlobTimeout = time.Minute } // the hang-up comes first
		o.observer = obs
		o.logger = slog.New(slog.NewJSONHandler(logs, nil))
	})
	path, _ := e.imagePath()
	blobs.mode.Store(storeHangs)
	ctx, hangUp := context.WithCancel(context.Background())
	defer hangUp()
	answer := make(chan *httptest.ResponseRecorder, 1)
	go func() {
		w := httptest.NewRecorder()
		e.h.ServeHTTP(w, httptest.NewRequestWithContext(ctx, "GET", path, nil))
		answer <- w
	}()
	testenv.Eventually(t, 10*time.Second, "the download to wait on the store", func() bool { return blobs.waiting.Load() == 1 })
	hangUp()
	w := <-answer
	is.Equal(w.Code, 499)
	is.Equal(obs.calls[len(obs.calls)-1], "GET /api/v1/images/{image_id} ") // 499 has no status text

	// Once the bytes began, a hang-up that cuts a read short still
	// breaks the answer off, without a line about the store.
	blobs.mode.Store(storeStalls)
	ctx, hangUp = context.WithCancel(context.Background())
	defer hangUp()
	aborted := make(chan any, 1)
	go func() {
		defer func() { aborted <- recover() }()
		e.h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequestWithContext(ctx, "GET", path, nil))
	}()
	testenv.Eventually(t, 10*time.Second, "the download to stall on the store", func() bool { return blobs.waiting.Load() == 1 })
	hangUp()
	is.Equal(<-aborted, http.ErrAbortHandler)

	for _, l := range logs.lines(t) {
		if l["level"] == "WARN" || l["level"] == "ERROR" {
			t.Errorf("a hung-up download was logged as a failure: %v", l)
		}
	}
}

// within is h serving each request with ctx as its context: a client
// that hangs up when ctx is cancelled.
func within(ctx context.Context, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r.WithContext(ctx)) })
}
