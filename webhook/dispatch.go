package webhook

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/retry"
	"github.com/imagegen/imagegen/internal/slots"
	"github.com/imagegen/imagegen/wire"
)

// Poster sends a POST without following redirects; *fetch.Fetcher is
// one. One that is also an AnswerPoster lets the dispatcher see the
// receiver's Retry-After.
type Poster interface {
	Post(ctx context.Context, url string, header http.Header, body []byte) (status int, err error)
}

// Config configures a Dispatcher.
type Config struct {
	Service *imagegen.Service // renders tasks and owners' secrets
	// Store is where the service queues deliveries: its store.
	Store imagegen.WebhookStore
	// Render turns a finished task into the body to send: the task as
	// the API shows it (httpapi.Handler.TaskJSON).
	Render func(*imagegen.Task) ([]byte, error)
	Poster Poster // the guarded sender (fetch.Fetcher.Post)

	// MaxAttempts is how many attempts a delivery gets before it is
	// given up (default 10); one answered 410 Gone is given up at once.
	MaxAttempts int
	// Backoff is the wait before the second attempt, doubling for each
	// one after it up to MaxBackoff (default 5s).
	Backoff time.Duration
	// MaxBackoff caps the wait between two attempts (default 10m),
	// including one a receiver asks for: on 429 or 503 with a
	// Retry-After (seconds or an HTTP date; a Retry-After-Ms, in
	// milliseconds, wins) the next attempt waits the longer of the
	// backoff and Retry-After, at most MaxBackoff, so a receiver can
	// slow deliveries down but neither hurry them nor park one for
	// longer. A missing, malformed or negative Retry-After, or
	// one on another status, leaves the backoff. Either way the attempt
	// counts towards MaxAttempts. Retry-After is read only through an
	// AnswerPoster.
	MaxBackoff time.Duration
	// AttemptTimeout bounds one attempt, from the render to the
	// receiver's answer; a receiver that has not answered by then has
	// failed this attempt. Default 10s.
	AttemptTimeout time.Duration
	// Lease is a claimed delivery's lease (default 1m, and at least
	// twice AttemptTimeout). A delivery claimed while its destination or
	// owner has its share in flight waits in the dispatcher for its turn
	// (a few times the share at most, and never past its lease), or is
	// given back to the store to come again shortly (see Run).
	Lease        time.Duration
	PollInterval time.Duration // how often to look for due deliveries; default 1s
	// Concurrency is how many deliveries are in flight at once, each on
	// its own (default 8).
	Concurrency int
	// PerDestination is how many of those may go to one destination
	// (the URL's host and port, however the URL spells them: the case,
	// a trailing dot, the default port written or not) at once, so that
	// one slow or hanging receiver cannot take every slot (default
	// Concurrency/4, at least 1).
	PerDestination int
	// PerOwner is how many may be in flight for one owner's tasks at
	// once, whatever their destinations, so that a user who points
	// callbacks at many hanging receivers cannot take every slot either
	// (default Concurrency/4, at least 1).
	PerOwner int
	Clock    imagegen.Clock
	Logger   *slog.Logger
	// Observer is told the outcome of each delivery attempt
	// (Observer.WebhookDelivery), for metrics (package metrics); usually
	// the service's own. Nil counts nothing.
	Observer imagegen.Observer
}

// Dispatcher sends due callbacks. Any number of dispatchers may share a
// store: deliveries are leased. Deliveries are claimed in due-time order
// and each runs on its own, within AttemptTimeout; at most Concurrency
// are in flight, at most PerDestination of them to one destination and
// at most PerOwner of them for one owner's tasks.
type Dispatcher struct {
	cfg   Config
	store imagegen.WebhookStore

	mu     sync.Mutex
	flying map[string]int       // deliveries in flight per destination ("d:") and owner ("o:")
	moved  map[string]time.Time // per key in flying: when its first delivery started, or one last ended
	back   map[string]backlog   // per key in flying: when deliveries given back come again
	freed  *sync.Cond           // on mu: a delivery ended
	held   heldDeliveries       // on mu: claimed by Run, waiting for their destination's or owner's turn
	wake   chan struct{}        // (1) a delivery ended while some are held
	unsent unsent               // attempts that failed before anything was sent, per delivery
}

// NewDispatcher returns a Dispatcher, or an error naming a bad field.
func NewDispatcher(c Config) (*Dispatcher, error) {
	if c.Service == nil || c.Store == nil || c.Render == nil || c.Poster == nil {
		return nil, errors.New("webhook: Config.Service, Store, Render and Poster are required")
	}
	if c.Concurrency < 0 || c.PerDestination < 0 || c.PerOwner < 0 || c.AttemptTimeout < 0 {
		return nil, errors.New("webhook: Config.Concurrency, PerDestination, PerOwner and AttemptTimeout must not be negative")
	}
	c.MaxAttempts = cmp.Or(c.MaxAttempts, 10)
	c.Backoff = cmp.Or(c.Backoff, 5*time.Second)
	c.MaxBackoff = cmp.Or(c.MaxBackoff, 10*time.Minute)
	c.AttemptTimeout = cmp.Or(c.AttemptTimeout, 10*time.Second)
	c.Lease = max(cmp.Or(c.Lease, time.Minute), 2*c.AttemptTimeout)
	c.PollInterval = cmp.Or(c.PollInterval, time.Second)
	c.Concurrency = cmp.Or(c.Concurrency, 8)
	c.PerDestination = min(cmp.Or(c.PerDestination, max(1, c.Concurrency/4)), c.Concurrency)
	c.PerOwner = min(cmp.Or(c.PerOwner, max(1, c.Concurrency/4)), c.Concurrency)
	if c.Clock == nil {
		c.Clock = imagegen.SystemClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Observer == nil {
		c.Observer = imagegen.NopObserver{}
	}
	d := &Dispatcher{cfg: c, store: c.Store, flying: map[string]int{}, moved: map[string]time.Time{},
		back: map[string]backlog{}, held: heldDeliveries{by: map[string]int{}}, wake: make(chan struct{}, 1)}
	d.freed = sync.NewCond(&d.mu)
	return d, nil
}

// Run delivers due callbacks until ctx ends, then waits for the
// deliveries in flight (each ends within AttemptTimeout). A slot that
// frees up is filled at once: deliveries do not wait for each other.
//
// A delivery claimed while its destination or owner has its share in
// flight is held until one of those ends (up to 8 times the share), so a
// burst to one receiver goes at that receiver's pace; one held so long
// that fewer than two attempts' time is left of its lease is given back
// instead of started. Beyond what it holds, a delivery is given back to
// the store (PostponeWebhook, no attempt counted), due again after
// PollInterval, or AttemptTimeout when nothing of that destination or
// owner has moved for a PollInterval (a hanging receiver); at most as
// many as it may hold come back together, the next ones that interval
// later, so a backlog comes back at the pace it can go out. When Run
// ends, the held deliveries and those cut short in flight are given
// back, due at once. It returns nil once ctx has ended and the deliveries
// in flight are done: a failing store is logged and tried again, not
// returned (server.Server.Run passes on a non-nil error all the same).
func (d *Dispatcher) Run(ctx context.Context) error {
	pool := slots.New(d.cfg.Concurrency)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer d.giveBackHeld(ctx)
	done := func() { pool.Give(1) }
	for {
		free := pool.TakeFree(ctx) // one free slot, and the others free now
		if free == 0 {
			return nil
		}
		started := d.startHeld(ctx, free, &wg, done)
		claimed, startedNew, err := 0, 0, error(nil)
		if started < free {
			claimed, startedNew, err = d.start(ctx, free-started, &wg, done, false)
		}
		pool.Give(free - started - startedNew)
		if err != nil && ctx.Err() == nil {
			d.cfg.Logger.ErrorContext(ctx, "webhook dispatch", "err", err)
		}
		if (claimed > 0 && err == nil) || started == free {
			continue // there may be more due, or held ones took every slot
		}
		select {
		case <-ctx.Done():
			return nil
		case <-d.cfg.Clock.After(d.cfg.PollInterval):
		case <-d.wake: // a held delivery may go now
		}
	}
}

// RunOnce claims the deliveries due now (up to Concurrency), sends them
// and waits for them; those to a destination that has its share in
// flight wait for one of its deliveries to end. It returns how many it
// claimed.
func (d *Dispatcher) RunOnce(ctx context.Context) (int, error) {
	var wg sync.WaitGroup
	claimed, _, err := d.start(ctx, d.cfg.Concurrency, &wg, func() {}, true)
	wg.Wait()
	return claimed, err
}

// start claims up to n due deliveries and starts each whose destination
// and owner have fewer than their share in flight (with queue, the
// others wait here for their turn; without, they are held or given back,
// see Run), calling done when one ends. It returns how many it claimed
// and started.
func (d *Dispatcher) start(ctx context.Context, n int, wg *sync.WaitGroup, done func(), queue bool) (claimed, started int, err error) {
	claimedAt := d.cfg.Clock.Now()
	due, err := d.store.ClaimWebhooks(ctx, d.cfg.Lease, n)
	if err != nil {
		return 0, 0, fmt.Errorf("webhook: claim: %w", err)
	}
	for _, del := range due {
		dest, owner := "d:"+destination(del.URL), "o:"+del.Owner
		if !d.take(dest, owner, queue) {
			d.holdOrGiveBack(ctx, heldDelivery{del: del, dest: dest, owner: owner, claimedAt: claimedAt})
			continue
		}
		started++
		d.send1(ctx, del, dest, owner, wg, done)
	}
	return len(due), started, nil
}

// send1 delivers del on its own goroutine; its slots (taken) are given
// back when it ends, and done is called.
func (d *Dispatcher) send1(ctx context.Context, del imagegen.WebhookDelivery, dest, owner string, wg *sync.WaitGroup, done func()) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer done()
		defer d.give(dest, owner)
		d.deliver(ctx, del)
	}()
}

// take reserves a slot of dest and of owner if each has fewer than its
// share (PerDestination, PerOwner) in flight; with wait, it waits for
// them (each delivery ends within AttemptTimeout).
func (d *Dispatcher) take(dest, owner string, wait bool) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for !d.hasRoom(dest, owner) {
		if !wait {
			return false
		}
		d.freed.Wait()
	}
	d.takeLocked(dest, owner)
	return true
}

// hasRoom reports whether dest and owner have fewer than their share in
// flight; d.mu is held.
func (d *Dispatcher) hasRoom(dest, owner string) bool {
	return d.flying[dest] < d.cfg.PerDestination && d.flying[owner] < d.cfg.PerOwner
}

// takeLocked counts a delivery of dest and owner in flight; d.mu is held.
func (d *Dispatcher) takeLocked(dest, owner string) {
	now := d.cfg.Clock.Now()
	for _, k := range []string{dest, owner} {
		if d.flying[k] == 0 {
			d.moved[k] = now
		}
		d.flying[k]++
	}
}

func (d *Dispatcher) give(dest, owner string) {
	now := d.cfg.Clock.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, k := range []string{dest, owner} {
		if d.flying[k]--; d.flying[k] <= 0 {
			delete(d.flying, k)
			delete(d.moved, k)
			delete(d.back, k)
		} else {
			d.moved[k] = now
		}
	}
	d.freed.Broadcast()
	if len(d.held.list) > 0 {
		select {
		case d.wake <- struct{}{}:
		default:
		}
	}
}

func (d *Dispatcher) deliver(runCtx context.Context, del imagegen.WebhookDelivery) {
	log := d.cfg.Logger.With("task_id", del.TaskID, "event", del.Event, "attempt", del.Attempts+1)
	attemptCtx, cancel := context.WithTimeout(runCtx, d.cfg.AttemptTimeout)
	err := d.send(attemptCtx, del)
	cancel()
	// The outcome is recorded even when runCtx ended meanwhile.
	ctx, cancelStore := storeContext(runCtx)
	defer cancelStore()
	outcome := "retry"
	var answered *answerError
	errors.As(err, &answered)
	unsentN := 0 // failures before sending in a row, this one included
	if errors.As(err, new(*notSentError)) && !errors.Is(err, imagegen.ErrTaskNotFound) && runCtx.Err() == nil {
		unsentN = d.unsent.add(del, d.cfg.Clock.Now(), d.cfg.Lease+2*d.cfg.MaxBackoff)
	}
	switch {
	case err == nil:
		outcome = "delivered"
		log.InfoContext(ctx, "webhook delivered")
		err = d.store.AckWebhook(ctx, del.ID)
	case errors.Is(err, imagegen.ErrTaskNotFound):
		outcome = "dropped"
		log.InfoContext(ctx, "webhook dropped: the task has expired")
		err = d.store.AckWebhook(ctx, del.ID)
	case runCtx.Err() != nil && answered == nil:
		// The run ends, not the receiver: given back, no attempt counted.
		// A receiver that did answer (its answer came back as the run
		// ended) decides like any other: a 410 gives it up, a Retry-After
		// is honoured.
		outcome = ""
		err = d.store.PostponeWebhook(ctx, del.ID, 0)
	case unsentN > 0 && unsentN <= d.cfg.MaxAttempts:
		// Failed on our side before anything was sent: the receiver's
		// attempts are not used up, but the delivery backs off; past
		// MaxAttempts such failures in a row it is counted below, as a
		// failed attempt (see unsent).
		outcome = "not_sent"
		delay := d.backoff(unsentN)
		log.WarnContext(ctx, "webhook not sent: it failed before reaching the receiver; no attempt counted", "err", err, "delay", delay.String())
		err = d.store.PostponeWebhook(ctx, del.ID, delay)
	case answered != nil && answered.status == http.StatusGone:
		// The receiver says the endpoint is gone: no attempt would do
		// better. Given up like the last attempt (the URL, which may
		// carry a secret, is not logged).
		outcome = "given_up"
		log.WarnContext(ctx, "webhook given up: the receiver answered 410 Gone", "status", answered.status)
		err = d.store.AckWebhook(ctx, del.ID)
	case del.Attempts+1 >= d.cfg.MaxAttempts:
		outcome = "given_up"
		log.WarnContext(ctx, "webhook given up", "err", err)
		err = d.store.AckWebhook(ctx, del.ID)
	default:
		// A Retry-After counts the attempt all the same (RetryWebhook,
		// not PostponeWebhook, which is for deliveries not attempted),
		// so a receiver that always asks for later is given up after
		// MaxAttempts.
		delay := d.retryDelay(del.Attempts+1, answered)
		log.InfoContext(ctx, "webhook will be retried", "err", err, "delay", delay.String())
		err = d.store.RetryWebhook(ctx, del.ID, delay)
	}
	if outcome != "" {
		d.cfg.Observer.WebhookDelivery(outcome)
	}
	if unsentN == 0 || outcome == "given_up" {
		d.unsent.reset(del) // it reached the poster, or is done with: a later failure before sending starts a new row
	}
	if err != nil {
		log.ErrorContext(ctx, "record webhook outcome; the lease will expire and it will be tried again", "err", err)
	}
}

// storeContext is the context of the store calls that record what became
// of claimed deliveries: they are made even when ctx has ended, within
// storeTimeout.
func storeContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
}

// storeTimeout bounds the store calls that record what became of
// claimed deliveries; one that fails leaves the delivery to its lease.
const storeTimeout = 10 * time.Second

// send renders, signs and posts one delivery; nil means a 2xx answer,
// and any other answer is an *answerError. A failure before the post
// (reading the task or the secret, rendering, signing) is a
// notSentError; the Poster's own refusals (a URL it refuses, a blocked
// address, a host that does not resolve) are the receiver's URL's, and
// count as attempts.
func (d *Dispatcher) send(ctx context.Context, del imagegen.WebhookDelivery) error {
	t, err := d.cfg.Service.Task(ctx, del.Owner, del.TaskID)
	if err != nil {
		return notSent(fmt.Errorf("reading the task: %w", err))
	}
	body, err := d.cfg.Render(t)
	if err != nil {
		return notSent(fmt.Errorf("render: %w", err))
	}
	secrets, err := d.cfg.Service.WebhookSigningSecrets(ctx, del.Owner)
	if err != nil {
		return notSent(fmt.Errorf("reading the owner's secret: %w", err))
	}
	header, err := wire.SignedHeaders(secrets, messageID(del), d.cfg.Clock.Now(), body)
	if err != nil {
		return notSent(fmt.Errorf("signing: %w", err))
	}
	header.Set(wire.HeaderEvent, string(cmp.Or(del.Event, imagegen.EventCompleted)))
	status, answer, err := d.post(ctx, del.URL, header, body)
	if err != nil {
		return err
	}
	if status < 200 || status > 299 {
		return newAnswerError(status, answer, d.cfg.Clock.Now())
	}
	return nil
}

// backoff is the delay after the given number of failed attempts.
func (d *Dispatcher) backoff(failed int) time.Duration {
	return retry.Backoff(failed-1, d.cfg.Backoff, d.cfg.MaxBackoff, false)
}

// messageID is a delivery's webhook-id (wire.MessageID): the same on
// every retry of it, and different for each event of a task.
func messageID(del imagegen.WebhookDelivery) string {
	return wire.MessageID(del.TaskID, del.Event)
}
