package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/wire"
)

// generating runs alice's one task (the only one queued) on a goroutine
// of its own until the model blocks in it: the task is processing.
// stopped is closed once the generation ends (Block returns when its
// context ends: a cancel).
func (e *env) generating() (stopped <-chan struct{}) {
	e.t.Helper()
	return e.generatingUntil(make(chan struct{}))
}

// generatingUntil is generating with a model that succeeds once release
// is closed.
func (e *env) generatingUntil(release <-chan struct{}) (stopped <-chan struct{}) {
	e.t.Helper()
	started, done := make(chan struct{}), make(chan struct{})
	e.model.Then(imagegentest.Block(started, release))
	go func() { defer close(done); _, _ = e.svc.RunOnce(context.Background()) }()
	<-started
	return done
}

// onlyTask is alice's one task, as GET /api/v1/tasks lists it.
func (e *env) onlyTask() wire.TaskBody {
	e.t.Helper()
	is := is.New(e.t)
	var list wire.TaskList
	is.NoErr(json.Unmarshal(e.do("GET", "/api/v1/tasks", e.key, "").Body.Bytes(), &list))
	is.Equal(len(list.Tasks), 1)
	return list.Tasks[0]
}

// The API's cancel of a running task is its owner's choice, made once
// the generation had begun: the task fails as cancelled and keeps its
// charge (a cancel was a way to have a provider's call for nothing).
func TestCancelOfARunningTaskKeepsItsCharge(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	id := e.submitted() // alice: 10 - 2
	stopped := e.generating()
	before := e.credits()
	is.Equal(before, int64(8))

	w := e.do("POST", "/api/v1/tasks/"+id+"/cancel", e.key, "")
	is.Equal(w.Code, http.StatusOK)
	m, _ := fields(t, w)
	is.Equal(m["status"], "failed")
	is.Equal(m["error_code"], "cancelled")
	<-stopped                     // the generation was stopped
	is.Equal(e.credits(), before) // the charge kept
}

// An OpenAI request: its generation is running when the test acts.
// hangUp cancels the request's context, as a client that hangs up does.
func startOpenAIGeneration(t *testing.T, o *openAIEnv) (answer <-chan *httptest.ResponseRecorder, hangUp context.CancelFunc, stopped <-chan struct{}) {
	t.Helper()
	ctx, hangUp := context.WithCancel(context.Background())
	t.Cleanup(hangUp)
	answer = startWaiting(t, o.clock, func() *httptest.ResponseRecorder {
		return doOn(within(ctx, o.h), "POST", "/v1/images/generations", o.key, `{"prompt":"a red fox"}`)
	})
	return answer, hangUp, o.generating()
}

// A caller of the OpenAI-compatible endpoint that hangs up while its
// image is made chose to stop: its task is cancelled and keeps its
// charge, as the owner's cancel of a running task does.
func TestOpenAIHangUpDuringGenerationKeepsTheCharge(t *testing.T) {
	is := is.New(t)
	o := newOpenAIEnv(t, 1000)
	answer, hangUp, stopped := startOpenAIGeneration(t, o)
	hangUp()
	is.Equal((<-answer).Code, 499)
	<-stopped
	is.Equal(o.credits(), int64(8)) // 10 - 2, kept
	is.Equal(o.onlyTask().ErrorCode, imagegen.CodeCancelled)
}

// When the server drains while an OpenAI request's image is being made,
// the cancel is the server's choice: refunded in full. (Running out of
// time during a generation: TestOpenAIRunningPastTheExtensionIsRefunded.)
func TestOpenAIServerGivingUpDuringGenerationRefunds(t *testing.T) {
	is := is.New(t)
	o := newOpenAIEnv(t, 1000)
	answer, _, stopped := startOpenAIGeneration(t, o)
	o.api.Drain()
	is.Equal((<-answer).Code, http.StatusServiceUnavailable)
	<-stopped
	is.Equal(o.credits(), int64(10)) // refunded
	is.Equal(o.onlyTask().ErrorCode, imagegen.CodeCancelled)
}
