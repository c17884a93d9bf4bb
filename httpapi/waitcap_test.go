package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen/httpapi"
	"github.com/imagegen/imagegen/wire"
)

// answered returns the answer on got, failing t if it does not come: a
// request beyond the cap must not wait on the clock (nothing advances
// it here), so the bound only guards against a hang.
func answeredAtOnce(t *testing.T, got <-chan *httptest.ResponseRecorder, what string) *httptest.ResponseRecorder {
	t.Helper()
	select {
	case w := <-got:
		return w
	case <-time.After(10 * time.Second):
		t.Fatalf("%s waited instead of answering at once", what)
		return nil
	}
}

// send serves one request in a goroutine of its own; the answer comes on
// the channel.
func send(h http.Handler, r *http.Request) <-chan *httptest.ResponseRecorder {
	got := make(chan *httptest.ResponseRecorder, 1)
	go func() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		got <- w
	}()
	return got
}

func pollRequest(ctx context.Context, key, id string) *http.Request {
	r := httptest.NewRequestWithContext(ctx, "GET", "/api/v1/tasks/"+id, nil)
	r.Header.Set("Authorization", "Bearer "+key)
	r.Header.Set("Prefer", "wait=60")
	return r
}

// TestPreferWaitCappedPerOwner: one owner holds at most
// Config.MaxWaitsPerOwner "Prefer: wait" polls at once, whatever key
// each uses; one more is answered at once with the task as it stands
// and no Preference-Applied, while another owner's poll still waits; a
// wait that ends (here the caller hanging up) frees its slot.
func TestPreferWaitCappedPerOwner(t *testing.T) {
	is := is.New(t)
	e := newEnv(t, func(o *envOptions) { o.api = func(c *httpapi.Config) { c.MaxWaitsPerOwner = 2 } })
	second := e.user("alice", 0) // another key of the same owner
	ids := []string{e.submitted(), e.submitted(), e.submitted()}

	ctx, hangUp := context.WithCancel(t.Context())
	defer hangUp()
	first := startWaiting(t, e.clock, func() *httptest.ResponseRecorder {
		return <-send(e.h, pollRequest(ctx, e.key, ids[0]))
	})
	held := e.waitPoll(ids[1], "wait=60")

	w := answeredAtOnce(t, send(e.h, pollRequest(t.Context(), second, ids[2])), "alice's third poll")
	is.Equal(w.Code, http.StatusOK)
	is.Equal(w.Header().Get("Preference-Applied"), "") // the wait was not applied
	m, _ := fields(t, w)
	is.Equal(m["status"], "pending")
	is.Equal(m["task_id"], ids[2])

	bob := e.user("bob", 10)
	var sub wire.Submitted
	is.NoErr(json.Unmarshal(e.submit(bob, t2i).Body.Bytes(), &sub))
	bobs := startWaiting(t, e.clock, func() *httptest.ResponseRecorder { // another owner still waits
		return e.do("GET", "/api/v1/tasks/"+sub.TaskID, bob, "", "Prefer", "wait=60")
	})

	hangUp() // the first wait ends: its slot is free again
	<-first
	again := startWaiting(t, e.clock, func() *httptest.ResponseRecorder {
		return e.do("GET", "/api/v1/tasks/"+ids[2], second, "", "Prefer", "wait=60")
	})

	e.clock.Advance(60 * time.Second)
	for _, got := range []<-chan *httptest.ResponseRecorder{held, bobs, again} {
		w := <-got
		is.Equal(w.Code, http.StatusOK)
		is.Equal(w.Header().Get("Preference-Applied"), "wait=60") // these waited
	}
}

// TestOpenAIRefusedBeyondWaitCap: an OpenAI request that would hold one
// more wait than Config.MaxWaitsPerOwner is refused with 429 in OpenAI's
// shape and Retry-After before it submits: nothing is charged, no task
// is made.
func TestOpenAIRefusedBeyondWaitCap(t *testing.T) {
	is := is.New(t)
	o := newOpenAIEnv(t, 1000, func(c *httpapi.Config) { c.MaxWaitsPerOwner = 1 })
	second := o.user("alice", 0)
	first := startWaiting(t, o.clock, func() *httptest.ResponseRecorder { // no worker runs: it waits
		return o.do("POST", "/v1/images/generations", o.key, `{"prompt":"otter"}`)
	})
	balance := o.credits()
	tasks := func() int {
		var list wire.TaskList
		is.NoErr(json.Unmarshal(o.do("GET", "/api/v1/tasks", o.key, "").Body.Bytes(), &list))
		return len(list.Tasks)
	}
	is.Equal(tasks(), 1)

	r := httptest.NewRequest("POST", "/v1/images/generations", strings.NewReader(`{"prompt":"otter"}`))
	r.Header.Set("Authorization", "Bearer "+second)
	r.Header.Set("Content-Type", "application/json")
	w := answeredAtOnce(t, send(o.h, r), "the OpenAI request beyond the cap")
	o.errorShape(t, w, http.StatusTooManyRequests, "requests", "", "rate_limit_exceeded")
	is.True(w.Header().Get("Retry-After") != "")
	is.True(w.Header().Get("X-Should-Retry") != "false") // worth retrying once a wait ends
	is.Equal(o.credits(), balance)                       // nothing charged
	is.Equal(tasks(), 1)                                 // nothing submitted

	o.clock.Advance(30 * time.Second) // the first times out, cancelled and refunded
	o.errorShape(t, <-first, http.StatusGatewayTimeout, "server_error", "", "timeout")
}
