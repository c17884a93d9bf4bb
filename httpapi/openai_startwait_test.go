package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/httpapi"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv"
)

// Config.OpenAIWait bounds the wait for a task to start. The endpoint
// cancelled and refunded in full a task still running when it ran out,
// so a caller that kept a backlog about OpenAIWait deep had its tasks
// start with little time left, run on a worker and call the provider,
// and cost it nothing; and an honest caller lost a generation that was
// nearly done. A task processing at the deadline is now waited for at
// most one more OpenAIWait.

// newLongLeaseOpenAIEnv is newOpenAIEnv (OpenAIWait 30 s) with leases
// of an hour, so that the clock moves of these tests neither renew nor
// expire a running task's lease: the request's wait is the one timer on
// the manual clock that they move past.
func newLongLeaseOpenAIEnv(t *testing.T) *openAIEnv {
	t.Helper()
	o := newOpenAIEnv(t, 1000) // for its OpenAI schemas; its env is replaced below
	o.env = newEnv(t, func(opt *envOptions) {
		opt.openAI = true
		opt.service = func(c *imagegen.Config) { c.LeaseDuration = time.Hour }
		opt.api = func(c *httpapi.Config) { c.OpenAIWait = 30 * time.Second }
	})
	return o
}

// passDeadline moves the clock by d, onto a deadline of the request's
// wait, and returns once the request has answered or waits on the clock
// again.
func passDeadline(t *testing.T, o *openAIEnv, answer <-chan *httptest.ResponseRecorder, d time.Duration) {
	t.Helper()
	before := o.clock.Waiters() // the request's timer among them
	o.clock.Advance(d)
	testenv.Eventually(t, 10*time.Second, "the request to answer or wait again", func() bool {
		return len(answer) > 0 || o.clock.Waiters() >= before
	})
}

// answered is the request's answer; it fails t if none comes within 20 s
// (a request that waits on the manual clock, which no longer moves).
func answered(t *testing.T, answer <-chan *httptest.ResponseRecorder) *httptest.ResponseRecorder {
	t.Helper()
	select {
	case w := <-answer:
		return w
	case <-time.After(20 * time.Second):
		t.Fatal("the request was not answered")
		return nil
	}
}

// A task that a worker takes up a second before OpenAIWait runs out and
// that ends during the extension is answered with its image, and charged
// once like any task.
func TestOpenAITaskStartedBeforeTheDeadlineIsAnswered(t *testing.T) {
	is := is.New(t)
	o := newLongLeaseOpenAIEnv(t)
	answer := startWaiting(t, o.clock, func() *httptest.ResponseRecorder {
		return o.do("POST", "/v1/images/generations", o.key, `{"prompt":"a red fox"}`)
	})
	o.clock.Advance(29 * time.Second) // queued all along
	release := make(chan struct{})
	stopped := o.generatingUntil(release)
	passDeadline(t, o, answer, time.Second)
	is.Equal(len(answer), 0)                                 // still waiting,
	is.Equal(o.onlyTask().Status, imagegen.StatusProcessing) // for a task that runs on
	close(release)
	w := answered(t, answer)
	is.Equal(w.Code, http.StatusOK)
	o.valid(t, "ImagesResponse", w.Body.Bytes())
	var got httpapi.OpenAIImagesResponse
	is.NoErr(json.Unmarshal(w.Body.Bytes(), &got))
	is.Equal(len(got.Data), 1)
	img := o.do("GET", strings.TrimPrefix(got.Data[0].URL, "https://img.example.test"), "", "")
	is.Equal(img.Code, http.StatusOK)
	_, err := png.Decode(img.Body)
	is.NoErr(err)
	<-stopped
	is.Equal(o.credits(), int64(8)) // 10 - 2: charged once, not refunded
	is.Equal(o.onlyTask().Status, imagegen.StatusSuccess)
	is.Equal(len(o.model.Calls()), 1)
}

// A task still pending when OpenAIWait runs out is not waited for any
// longer: it is cancelled and refunded in full at the deadline, whether
// no worker took it up yet or it is back in the queue after an attempt
// that failed.
func TestOpenAITaskPendingAtTheDeadlineIsCancelledAndRefunded(t *testing.T) {
	for name, before := range map[string]func(t *testing.T, o *openAIEnv){
		"never taken up": func(*testing.T, *openAIEnv) {},
		"back in the queue": func(t *testing.T, o *openAIEnv) {
			o.model.Then(imagegentest.Fail(&imagegen.ModelError{Provider: "scripted", Retryable: true, Err: errors.New("busy")}))
			ran, err := o.svc.RunOnce(context.Background())
			is.New(t).NoErr(err)
			is.New(t).True(ran)
			is.New(t).Equal(o.onlyTask().Status, imagegen.StatusPending) // to be tried again later
		},
	} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			o := newLongLeaseOpenAIEnv(t)
			answer := startWaiting(t, o.clock, func() *httptest.ResponseRecorder {
				return o.do("POST", "/v1/images/generations", o.key, `{"prompt":"a red fox"}`)
			})
			before(t, o)
			calls := len(o.model.Calls())
			o.clock.Advance(30 * time.Second) // the one move: no extension
			w := answered(t, answer)
			o.errorShape(t, w, http.StatusGatewayTimeout, "server_error", "", "timeout")
			is.Equal(w.Header().Get("X-Should-Retry"), "false")
			is.Equal(o.credits(), int64(10)) // refunded in full
			is.Equal(o.onlyTask().ErrorCode, imagegen.CodeCancelled)
			ran, err := o.svc.RunOnce(context.Background())
			is.NoErr(err)
			is.True(!ran) // nothing left to run
			is.Equal(len(o.model.Calls()), calls)
		})
	}
}

// A task still running when the extension runs out too (a provider or a
// worker that hangs: it had a whole OpenAIWait to run, whenever it
// started) is cancelled and refunded in full, as the server's choice.
// The server draining during the extension refunds it too; the caller
// hanging up during it keeps the charge, as its own cancel would.
func TestOpenAIRunningPastTheExtensionIsRefunded(t *testing.T) {
	for name, c := range map[string]struct {
		act     func(o *openAIEnv, hangUp context.CancelFunc)
		code    int
		credits int64
	}{
		"the extension runs out": {func(o *openAIEnv, _ context.CancelFunc) { o.clock.Advance(30 * time.Second) }, http.StatusGatewayTimeout, 10},
		"the server drains":      {func(o *openAIEnv, _ context.CancelFunc) { o.api.Drain() }, http.StatusServiceUnavailable, 10},
		"the caller hangs up":    {func(_ *openAIEnv, hangUp context.CancelFunc) { hangUp() }, 499, 8},
	} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			o := newLongLeaseOpenAIEnv(t)
			answer, hangUp, stopped := startOpenAIGeneration(t, o)
			passDeadline(t, o, answer, 30*time.Second)
			is.Equal(len(answer), 0) // extended: the task was running at the deadline
			is.Equal(o.onlyTask().Status, imagegen.StatusProcessing)
			c.act(o, hangUp)
			w := answered(t, answer)
			is.Equal(w.Code, c.code)
			<-stopped // the generation was stopped
			is.Equal(o.credits(), c.credits)
			is.Equal(o.onlyTask().ErrorCode, imagegen.CodeCancelled)
		})
	}
}

// An OpenAI request may be answered up to twice OpenAIWait after its
// submit, longer than the WriteTimeout a server may set for its other
// routes (serve's is 90 s against the longest wait of 120 s): the
// handler moves its connection's write deadline past the wait, so the
// answer of a task that ended, charged, is not cut off. Here the
// server's WriteTimeout passes, in real time, while the task runs.
func TestOpenAIAnswerOutlivesTheServersWriteTimeout(t *testing.T) {
	is := is.New(t)
	o := newLongLeaseOpenAIEnv(t)
	srv := httptest.NewUnstartedServer(o.h)
	srv.Config.WriteTimeout = 200 * time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)
	type result struct {
		code int
		body []byte
		err  error
	}
	answer := startWaiting(t, o.clock, func() result {
		req, err := http.NewRequest("POST", srv.URL+"/v1/images/generations", strings.NewReader(`{"prompt":"a red fox"}`))
		if err != nil {
			return result{err: err}
		}
		req.Header.Set("Authorization", "Bearer "+o.key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := srv.Client().Do(req)
		if err != nil {
			return result{err: err}
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return result{code: resp.StatusCode, body: body, err: err}
	})
	release := make(chan struct{})
	stopped := o.generatingUntil(release)
	time.Sleep(2 * srv.Config.WriteTimeout) // the server's own deadline passes while the task runs
	close(release)
	<-stopped
	var r result
	select {
	case r = <-answer:
	case <-time.After(20 * time.Second):
		t.Fatal("the request was not answered")
	}
	is.NoErr(r.err) // the answer arrived whole
	is.Equal(r.code, http.StatusOK)
	o.valid(t, "ImagesResponse", r.body)
	is.Equal(o.credits(), int64(8)) // charged once
}
