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
)

// HeaderEvent names the task event a delivery reports: "processing" (a
// worker started the task) or "completed" (it reached success or
// failed). The body is the task as it is when the delivery is sent.
const HeaderEvent = "webhook-event"

// Poster sends a POST without following redirects; *fetch.Fetcher is one.
type Poster interface {
	Post(ctx context.Context, url string, header http.Header, body []byte) (status int, err error)
}

// Config configures a Dispatcher.
type Config struct {
	Service *imagegen.Service // deliveries are queued in its store
	// Render turns a finished task into the body to send: the task as
	// the API shows it (httpapi.Handler.TaskJSON).
	Render func(*imagegen.Task) ([]byte, error)
	Poster Poster // the guarded sender (fetch.Fetcher.Post)

	MaxAttempts  int           // default 10
	Backoff      time.Duration // before the second attempt, doubling; default 5s
	MaxBackoff   time.Duration // default 10m
	Lease        time.Duration // a claimed delivery's lease; default 1m
	PollInterval time.Duration // how often to look for due deliveries; default 1s
	Concurrency  int           // deliveries in flight; default 4
	Clock        imagegen.Clock
	Logger       *slog.Logger
}

// Dispatcher sends due callbacks. Any number of dispatchers may share a
// store: deliveries are leased.
type Dispatcher struct {
	cfg   Config
	store imagegen.WebhookStore
}

// NewDispatcher returns a Dispatcher, or an error naming a bad field.
func NewDispatcher(c Config) (*Dispatcher, error) {
	if c.Service == nil || c.Render == nil || c.Poster == nil {
		return nil, errors.New("webhook: Config.Service, Render and Poster are required")
	}
	c.MaxAttempts = cmp.Or(c.MaxAttempts, 10)
	c.Backoff = cmp.Or(c.Backoff, 5*time.Second)
	c.MaxBackoff = cmp.Or(c.MaxBackoff, 10*time.Minute)
	c.Lease = cmp.Or(c.Lease, time.Minute)
	c.PollInterval = cmp.Or(c.PollInterval, time.Second)
	c.Concurrency = cmp.Or(c.Concurrency, 4)
	if c.Clock == nil {
		c.Clock = imagegen.SystemClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return &Dispatcher{cfg: c, store: c.Service.Store()}, nil
}

// Run delivers due callbacks until ctx ends.
func (d *Dispatcher) Run(ctx context.Context) error {
	for {
		n, err := d.RunOnce(ctx)
		if err != nil && ctx.Err() == nil {
			d.cfg.Logger.ErrorContext(ctx, "webhook dispatch", "err", err)
		}
		if n > 0 {
			continue // there may be more due
		}
		select {
		case <-ctx.Done():
			return nil
		case <-d.cfg.Clock.After(d.cfg.PollInterval):
		}
	}
}

// RunOnce claims the deliveries due now (up to Concurrency), sends them
// and records the outcomes. It returns how many it attempted.
func (d *Dispatcher) RunOnce(ctx context.Context) (int, error) {
	due, err := d.store.ClaimWebhooks(ctx, d.cfg.Lease, d.cfg.Concurrency)
	if err != nil {
		return 0, fmt.Errorf("webhook: claim: %w", err)
	}
	var wg sync.WaitGroup
	for _, del := range due {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.deliver(ctx, del)
		}()
	}
	wg.Wait()
	return len(due), nil
}

func (d *Dispatcher) deliver(ctx context.Context, del imagegen.WebhookDelivery) {
	log := d.cfg.Logger.With("task_id", del.TaskID, "event", del.Event, "attempt", del.Attempts+1)
	err := d.send(ctx, del)
	switch {
	case err == nil:
		log.InfoContext(ctx, "webhook delivered")
		err = d.store.AckWebhook(ctx, cmp.Or(del.ID, del.TaskID))
	case errors.Is(err, imagegen.ErrTaskNotFound):
		log.InfoContext(ctx, "webhook dropped: the task has expired")
		err = d.store.AckWebhook(ctx, cmp.Or(del.ID, del.TaskID))
	case del.Attempts+1 >= d.cfg.MaxAttempts:
		log.WarnContext(ctx, "webhook given up", "err", err)
		err = d.store.AckWebhook(ctx, cmp.Or(del.ID, del.TaskID))
	default:
		delay := d.backoff(del.Attempts + 1)
		log.InfoContext(ctx, "webhook will be retried", "err", err, "delay", delay)
		err = d.store.RetryWebhook(ctx, cmp.Or(del.ID, del.TaskID), delay)
	}
	if err != nil {
		log.ErrorContext(ctx, "record webhook outcome; the lease will expire and it will be tried again", "err", err)
	}
}

// send renders, signs and posts one delivery; nil means a 2xx answer.
func (d *Dispatcher) send(ctx context.Context, del imagegen.WebhookDelivery) error {
	t, err := d.cfg.Service.Task(ctx, del.Owner, del.TaskID)
	if err != nil {
		return err
	}
	body, err := d.cfg.Render(t)
	if err != nil {
		return fmt.Errorf("render: %w", err)
	}
	secret, err := d.cfg.Service.WebhookSecret(ctx, del.Owner)
	if err != nil {
		return err
	}
	header, err := Headers(secret, messageID(del), d.cfg.Clock.Now(), body)
	if err != nil {
		return err
	}
	header.Set(HeaderEvent, string(cmp.Or(del.Event, imagegen.EventCompleted)))
	status, err := d.cfg.Poster.Post(ctx, del.URL, header, body)
	if err != nil {
		return err
	}
	if status < 200 || status > 299 {
		return fmt.Errorf("receiver answered %d", status)
	}
	return nil
}

// backoff is the delay after the given number of failed attempts.
func (d *Dispatcher) backoff(failed int) time.Duration {
	return retry.Backoff(failed-1, d.cfg.Backoff, d.cfg.MaxBackoff, false)
}

// messageID is a delivery's webhook-id: the same on every retry of it,
// and different for each event of a task ("msg_<task id>" for completed,
// as before events could be chosen; "msg_<task id>_processing").
func messageID(del imagegen.WebhookDelivery) string {
	if del.Event == imagegen.EventProcessing {
		return "msg_" + del.TaskID + "_processing"
	}
	return "msg_" + del.TaskID
}
