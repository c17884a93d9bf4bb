package httpapi_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/matryer/is"
)

// TestDrainAnswersOpenWaits: Drain (at server shutdown) answers an open
// "Prefer: wait" at once with the task as it stands, and later waits do
// not wait.
func TestDrainAnswersOpenWaits(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	id := e.submitted()
	got := e.waitPoll(id, "wait=60")
	waitUntil(t, func() bool { return e.clock.Waiters() > 0 }) // the request is waiting
	e.api.Drain()
	select {
	case w := <-got:
		is.Equal(w.Code, http.StatusOK)
		m, _ := fields(t, w)
		is.Equal(m["status"], "pending")
	case <-time.After(5 * time.Second):
		t.Fatal("Drain did not answer the open wait")
	}
	select {
	case w := <-e.waitPoll(id, "wait=60"): // the manual clock never moves
		is.Equal(w.Code, http.StatusOK)
	case <-time.After(5 * time.Second):
		t.Fatal("a wait after Drain waited")
	}
	e.api.Drain() // twice is fine
}
