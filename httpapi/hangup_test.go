package httpapi_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen/httpapi"
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
		r := httptest.NewRequest("GET", "/api/v1/tasks/"+id, nil).WithContext(ctx)
		r.Header.Set("Authorization", "Bearer "+e.key)
		r.Header.Set("Prefer", "wait=30")
		w := httptest.NewRecorder()
		e.h.ServeHTTP(w, r)
		return w
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
// image is made gets its task cancelled and refunded (it has no task to
// come back to), and the request's line and the Observer say 499: they
// said 200, a success, for an answer nobody got.
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
		r := httptest.NewRequest("POST", "/v1/images/generations", strings.NewReader(`{"prompt":"a red fox"}`)).WithContext(ctx)
		r.Header.Set("Authorization", "Bearer "+e.key)
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		e.h.ServeHTTP(w, r)
		return w
	})
	hangUp()
	w := <-got
	is.Equal(w.Code, 499)
	is.Equal(obs.calls[len(obs.calls)-1], "POST /v1/images/generations ") // 499 has no status text
	is.Equal(e.credits(), before)                                         // cancelled, refunded
}
