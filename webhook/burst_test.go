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
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/webhook"
)

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
	testenv.Eventually(t, 10*time.Second, "2 + 16 deliveries", func() bool { return len(f.recv.got()) >= 18 })
	// The rest come back within a few poll intervals (1 s each). The
	// clock moves only once every claimed delivery has gone out or been
	// given back and the dispatcher waits for its next poll: the
	// receiver's pace does not matter.
	for waited := time.Duration(0); len(f.recv.got()) < n; waited += time.Second {
		is.True(waited < 20*time.Second) // at most a third of a lease
		testenv.Eventually(t, 10*time.Second, "the dispatcher's next poll, with nothing claimed", func() bool {
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
	mu        sync.Mutex
	claimed   int
	postponed []time.Duration // the delays of PostponeWebhook, in order
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
	s.mu.Lock()
	s.postponed = append(s.postponed, delay)
	s.mu.Unlock()
	return s.Store.PostponeWebhook(ctx, id, delay)
}

// postponedNow returns the PostponeWebhook delays so far.
func (s *settling) postponedNow() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.postponed...)
}

// delays returns the PostponeWebhook delays so far, and forgets them.
func (s *settling) delays() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.postponed
	s.postponed = nil
	return d
}

// When Run ends, the deliveries it held and those cut short in flight are
// given back due at once, with no attempt counted, instead of waiting for
// their lease.
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
		Service: f.svc, Store: f.store, Poster: poster, Clock: f.clock, Logger: quiet, Render: renderStatus,
	})
	is.NoErr(err)
	f.clock.Advance(time.Hour) // the workers' abandoned timers fire: from now on only the dispatcher waits
	runCtx, cancel := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() { defer close(stopped); _ = disp.Run(runCtx) }()
	testenv.Eventually(t, 10*time.Second, "the dispatcher's poll", func() bool { return f.clock.Waiters() > 0 }) // 2 in flight (hanging), 4 held
	cancel()
	<-stopped
	back, err := f.store.ClaimWebhooks(ctx, time.Minute, 10)
	is.NoErr(err)
	is.Equal(len(back), 6) // 2 cut short, 4 held
	for _, del := range back {
		is.Equal(del.Attempts, 0)
		is.Equal(del.Event, imagegen.EventCompleted)
	}
}

// hangingServer is one hanging receiver (see hanging), with the number
// of deliveries it received.
func hangingServer(t *testing.T) (url string, received func() int) {
	h := newHanging()
	return h.server(t), func() int { return int(h.received.Load()) }
}

// runDispatcher runs disp until the test ends (a bounded wait for its end).
func runDispatcher(t *testing.T, disp *webhook.Dispatcher) {
	runCtx, cancel := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() { defer close(stopped); _ = disp.Run(runCtx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-stopped:
		case <-time.After(time.Minute):
			t.Error("Run did not end within a minute of its context")
		}
	})
}

// hangingFixture is a fixture whose store records postponements, with
// owner u's n tasks finished with callbacks to one hanging receiver, and
// a dispatcher of default shares (2 a destination and an owner, 8 in
// all) on the manual clock, not yet running.
func hangingFixture(t *testing.T, n int) (f *fixture, st *settling, inFlight func() int, disp *webhook.Dispatcher) {
	is := is.New(t)
	f = newFixtureOn(t, true, func(s imagegen.Store) imagegen.Store {
		st = &settling{Store: s}
		return st
	})
	_, err := f.svc.Grant(ctx, "u", int64(n), "hanging")
	is.NoErr(err)
	url, inFlight := hangingServer(t)
	for range n {
		finishTask(t, f.svc, "u", url)
	}
	poster, err := fetch.New(fetch.Config{AllowPrivate: true})
	is.NoErr(err)
	disp, err = webhook.NewDispatcher(webhook.Config{Service: f.svc, Store: f.store, Poster: poster, Clock: f.clock, Logger: quiet, Render: renderStatus})
	is.NoErr(err)
	f.clock.Advance(time.Hour) // the workers' abandoned timers fire: from now on only the dispatcher waits
	return f, st, inFlight, disp
}

// A backlog beyond what the dispatcher holds comes back in batches of
// what it may hold, a poll interval apart, not all at the next poll; and
// once nothing of the receiver has moved for a poll interval (it hangs),
// an attempt's timeout apart.
func TestBacklogComesBackInBatches(t *testing.T) {
	is := is.New(t)
	f, st, inFlight, disp := hangingFixture(t, 60)
	runDispatcher(t, disp)
	testenv.Eventually(t, 10*time.Second, "2 in flight, 16 held, 42 given back", func() bool { return inFlight() == 2 && st.outstanding() == 18 && f.clock.Waiters() > 0 })
	var want []time.Duration
	for i := range 42 {
		want = append(want, time.Duration(1+i/16)*time.Second) // 16 at 1 s, 16 at 2 s, 10 at 3 s
	}
	is.Equal(st.delays(), want)

	f.clock.Advance(time.Second) // 16 come back; the receiver has not moved for a poll interval
	testenv.Eventually(t, 10*time.Second, "the 16 claimed again and given back", func() bool { return st.outstanding() == 18 && len(st.postponedNow()) == 16 })
	for _, d := range st.delays() {
		is.True(d >= 10*time.Second) // AttemptTimeout
	}
	is.Equal(inFlight(), 2)
}

// A held delivery with less than two attempts' time left of its lease is
// given back, due at once, instead of being started.
func TestHeldDeliveriesNearTheirLeaseEndAreGivenBack(t *testing.T) {
	is := is.New(t)
	f, st, inFlight, disp := hangingFixture(t, 6)
	runDispatcher(t, disp)
	testenv.Eventually(t, 10*time.Second, "2 in flight, 4 held", func() bool { return inFlight() == 2 && st.outstanding() == 6 && f.clock.Waiters() > 0 })
	is.Equal(len(st.delays()), 0)
	f.clock.Advance(41 * time.Second) // a minute's lease, 10 s attempts: 19 s left
	testenv.Eventually(t, 10*time.Second, "the 4 given back", func() bool { return len(st.postponedNow()) >= 4 })
	is.Equal(st.delays()[:4], []time.Duration{0, 0, 0, 0})
	is.Equal(inFlight(), 2) // none of them was started
}

// Deliveries of several owners to several receivers fill every slot of
// the dispatcher (8), each owner within its share (2).
func TestEverySlotIsUsed(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, true)
	var inFlight []func() int
	for _, owner := range []string{"a", "b", "c", "d"} {
		_, err := f.svc.Grant(ctx, owner, 3, "slots")
		is.NoErr(err)
		url, n := hangingServer(t)
		inFlight = append(inFlight, n)
		for range 3 {
			finishTask(t, f.svc, owner, url)
		}
	}
	f.clock.Advance(time.Hour)
	runDispatcher(t, f.disp)
	testenv.Eventually(t, 10*time.Second, "8 deliveries in flight", func() bool {
		total := 0
		for _, n := range inFlight {
			total += n()
		}
		return total == 8
	})
	for _, n := range inFlight {
		is.Equal(n(), 2)
	}
}
