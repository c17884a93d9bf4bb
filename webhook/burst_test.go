package webhook_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/fetch"
	"github.com/imagegen/imagegen/webhook"
)

// waitUntil waits (a bounded while) until cond holds.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatal("waited 10 s for " + what)
		}
		time.Sleep(time.Millisecond)
	}
}

// A burst of one owner's callbacks to one receiver goes at the pace of
// its share (PerDestination in flight): those claimed while the share is
// busy wait in the dispatcher for their turn (8 times the share) and,
// beyond that, come back after a poll interval, not after a lease.
func TestBurstToOneReceiverIsNotHeldForALease(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, true)
	_, err := f.svc.Grant(ctx, "u", 30, "burst") // 40 in all
	is.NoErr(err)
	const n = 30 // more than the dispatcher holds: 2 in flight, 8×2 held
	for range n {
		f.finishedTask(t)
	}
	f.clock.Advance(time.Hour) // the workers' abandoned timers fire: from now on only the dispatcher waits
	runCtx, cancel := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() { defer close(stopped); _ = f.disp.Run(runCtx) }()
	defer func() { cancel(); <-stopped }()
	// The clock stands still: no lease or poll interval passes, and the
	// share's held deliveries go out as the receiver answers.
	waitUntil(t, "2 + 16 deliveries", func() bool { return len(f.recv.got()) >= 18 })
	// The rest come back within a few poll intervals (1 s each).
	for i := 0; i < 20 && len(f.recv.got()) < n; i++ { // at most a third of a lease
		waitUntil(t, "the dispatcher's poll", func() bool { return f.clock.Waiters() > 0 })
		time.Sleep(10 * time.Millisecond) // let the round that woke it finish (pacing only)
		f.clock.Advance(time.Second)
	}
	is.Equal(len(f.recv.got()), n)
}

// When Run ends, the deliveries it held are given back due at once,
// with no attempt counted, instead of waiting for their lease.
func TestHeldDeliveriesAreGivenBackAtTheEnd(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, true)
	hang := make(chan struct{})
	hanging := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	defer hanging.Close()
	defer close(hang)
	for range 6 {
		finishTask(t, f.svc, "u", hanging.URL+"/hook")
	}
	poster, err := fetch.New(fetch.Config{AllowPrivate: true})
	is.NoErr(err)
	disp, err := webhook.NewDispatcher(webhook.Config{
		Service: f.svc, Poster: poster, Clock: f.clock, Logger: quiet, Render: renderStatus,
	})
	is.NoErr(err)
	f.clock.Advance(time.Hour) // the workers' abandoned timers fire: from now on only the dispatcher waits
	runCtx, cancel := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() { defer close(stopped); _ = disp.Run(runCtx) }()
	waitUntil(t, "the dispatcher's poll", func() bool { return f.clock.Waiters() > 0 }) // 2 in flight (hanging), 4 held
	cancel()
	<-stopped
	back, err := f.svc.Store().ClaimWebhooks(ctx, time.Minute, 10)
	is.NoErr(err)
	is.Equal(len(back), 4) // the held ones; the 2 sent were retried with a backoff
	for _, del := range back {
		is.Equal(del.Attempts, 0)
		is.Equal(del.Event, imagegen.EventCompleted)
	}
}
