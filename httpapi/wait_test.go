package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/store/memory"
)

// waitPoll sends alice's poll of task id with the Prefer header prefer
// and returns once it waits on the clock; the answer comes on the channel.
func (e *env) waitPoll(id, prefer string) <-chan *httptest.ResponseRecorder {
	return startWaiting(e.t, e.clock, func() *httptest.ResponseRecorder {
		return e.do("GET", "/api/v1/tasks/"+id, e.key, "", "Prefer", prefer)
	})
}

func (e *env) submitted() string {
	w := e.submit(e.key, t2i)
	is.New(e.t).Equal(w.Code, http.StatusCreated)
	var sub struct {
		TaskID string `json:"task_id"`
	}
	is.New(e.t).NoErr(json.Unmarshal(w.Body.Bytes(), &sub))
	return sub.TaskID
}

// startWaiting sends a request in a goroutine of its own and returns once
// the request waits on the manual clock (no worker runs): once the clock
// has more waiters than before, since timers of earlier work that nobody
// waits on any more still count. The answer comes on the channel.
func startWaiting[T any](t *testing.T, clock *imagegentest.Clock, request func() T) <-chan T {
	t.Helper()
	before := clock.Waiters()
	answer := make(chan T, 1)
	go func() { answer <- request() }()
	testenv.Eventually(t, 5*time.Second, "the request to wait on the clock", func() bool { return clock.Waiters() > before })
	return answer
}

// whileWorking sends a request in a goroutine of its own and runs svc's
// workers until it is answered, as `imagegen serve` would, so that a
// request that waits for its task ends; it fails t if the answer does
// not come within 20 s.
func whileWorking[T any](t testing.TB, svc *imagegen.Service, request func() T) T {
	t.Helper()
	answer := make(chan T, 1)
	go func() { answer <- request() }()
	var x T
	testenv.Eventually(t, 20*time.Second, "the request to be answered while workers run", func() bool {
		select {
		case x = <-answer:
			return true
		default:
			_, _ = svc.RunOnce(context.Background())
			return false
		}
	})
	return x
}

func TestPreferWaitAnswersWhenTheTaskFinishes(t *testing.T) {
	is := is.New(t)
	e := newEnv(t, func(o *envOptions) { o.limit = 2 })
	id := e.submitted()
	got := e.waitPoll(id, "wait=30")
	ran, err := e.svc.RunOnce(context.Background())
	is.NoErr(err)
	is.True(ran)
	w := <-got
	is.Equal(w.Code, http.StatusOK)
	is.Equal(w.Header().Get("Preference-Applied"), "wait=30")
	m, _ := fields(t, w)
	is.Equal(m["status"], "success")
	// A waited request counted once: submit + wait = the limit of 2.
	is.Equal(w.Header().Get("RateLimit"), `"default";r=0;t=60`)
}

func TestPreferWaitTimesOutWithTheCurrentState(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	id := e.submitted()
	got := e.waitPoll(id, "respond-async, wait=100") // capped at 60
	e.clock.Advance(60 * time.Second)
	w := <-got
	is.Equal(w.Header().Get("Preference-Applied"), "wait=60")
	m, keys := fields(t, w)
	is.Equal(m["status"], "pending")
	is.Equal(keys, []string{"status", "task_id"}) // still only task_id and status
}

func TestPreferWaitIgnoredWhenMalformed(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	id := e.submitted()
	for _, prefer := range []string{"wait=soon", "wait=-1", "return=minimal"} {
		w := e.do("GET", "/api/v1/tasks/"+id, e.key, "", "Prefer", prefer)
		is.Equal(w.Code, http.StatusOK)
		is.Equal(w.Header().Get("Preference-Applied"), "") // answered at once, preference not applied
	}
	w := e.do("GET", "/api/v1/tasks/nope", e.key, "", "Prefer", "wait=5")
	wantError(t, w, http.StatusNotFound, "task_not_found")
}

// Preference-Applied says the wait was honoured, so only a task answer
// carries it: not a 404 (unknown or another user's task), not a 500.
func TestPreferWaitNotAppliedOnErrors(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	id := e.submitted()
	w := e.do("GET", "/api/v1/tasks/nope", e.key, "", "Prefer", "wait=5")
	wantError(t, w, http.StatusNotFound, "task_not_found")
	is.Equal(w.Header().Get("Preference-Applied"), "")
	w = e.do("GET", "/api/v1/tasks/"+id, e.user("mallory", 0), "", "Prefer", "wait=5")
	wantError(t, w, http.StatusNotFound, "task_not_found")
	is.Equal(w.Header().Get("Preference-Applied"), "")
	w = e.do("GET", "/api/v1/tasks/"+id, e.key, "", "Prefer", "wait=0") // applied: answered at once
	is.Equal(w.Code, http.StatusOK)
	is.Equal(w.Header().Get("Preference-Applied"), "wait=0")

	clock := imagegentest.NewClock(time.Time{})
	broken := newEnv(t, func(o *envOptions) {
		o.store = failingStore{testenv.Memory(t, memory.Config{Clock: clock, Retention: retention})}
	})
	w = broken.do("GET", "/api/v1/tasks/x", broken.key, "", "Prefer", "wait=5")
	wantError(t, w, http.StatusInternalServerError, "internal_error")
	is.Equal(w.Header().Get("Preference-Applied"), "")
}

// TestDrainAnswersOpenWaits: Drain (at server shutdown) answers an open
// "Prefer: wait" at once with the task as it stands, and later waits do
// not wait.
func TestDrainAnswersOpenWaits(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	id := e.submitted()
	got := e.waitPoll(id, "wait=60")
	e.api.Drain()
	select {
	case w := <-got:
		is.Equal(w.Code, http.StatusOK)
		m, _ := fields(t, w)
		is.Equal(m["status"], "pending")
	case <-time.After(5 * time.Second):
		t.Fatal("Drain did not answer the open wait")
	}
	after := make(chan *httptest.ResponseRecorder, 1)
	go func() { after <- e.do("GET", "/api/v1/tasks/"+id, e.key, "", "Prefer", "wait=60") }()
	select {
	case w := <-after: // the manual clock never moves
		is.Equal(w.Code, http.StatusOK)
	case <-time.After(5 * time.Second):
		t.Fatal("a wait after Drain waited")
	}
	e.api.Drain() // twice is fine
}
