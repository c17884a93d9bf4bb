package webhook_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
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
	var settle *settling
	f := newFixtureOn(t, true, func(s imagegen.Store) imagegen.Store {
		settle = &settling{Store: s}
		return settle
	})
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
	// The rest come back within a few poll intervals (1 s each). The
	// clock moves only once every claimed delivery has gone out or been
	// given back and the dispatcher waits for its next poll: the
	// receiver's pace does not matter.
	for waited := time.Duration(0); len(f.recv.got()) < n; waited += time.Second {
		is.True(waited < 20*time.Second) // at most a third of a lease
		waitUntil(t, "the dispatcher's next poll, with nothing claimed", func() bool {
			return settle.outstanding() == 0 && f.clock.Waiters() > 0
		})
		if len(f.recv.got()) < n {
			f.clock.Advance(time.Second)
		}
	}
	is.Equal(len(f.recv.got()), n)
}

// settling is a store that counts the webhook deliveries claimed and not
// yet settled (acknowledged, retried or postponed): those in flight or
// held in a dispatcher.
type settling struct {
	imagegen.Store
	mu      sync.Mutex
	claimed int
}

func (s *settling) add(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.claimed += n
}

func (s *settling) outstanding() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.claimed
}

func (s *settling) ClaimWebhooks(ctx context.Context, lease time.Duration, n int) ([]imagegen.WebhookDelivery, error) {
	got, err := s.Store.ClaimWebhooks(ctx, lease, n)
	s.add(len(got))
	return got, err
}

func (s *settling) AckWebhook(ctx context.Context, id string) error {
	defer s.add(-1)
	return s.Store.AckWebhook(ctx, id)
}

func (s *settling) RetryWebhook(ctx context.Context, id string, delay time.Duration) error {
	defer s.add(-1)
	return s.Store.RetryWebhook(ctx, id, delay)
}

func (s *settling) PostponeWebhook(ctx context.Context, id string, delay time.Duration) error {
	defer s.add(-1)
	return s.Store.PostponeWebhook(ctx, id, delay)
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
