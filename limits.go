package imagegen

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// DefaultMaxPending is Config.MaxPending's default: an owner may have
// this many tasks waiting. It is far above what one user's keys can
// submit in a few minutes at the default request rate, and low enough
// that no owner can fill the queue for everyone.
const DefaultMaxPending = 1000

// QueueFullMessage is what a submit refused with ErrQueueFull is told.
const QueueFullMessage = "your queue is full: too many of your tasks are waiting to run; submit more once some have started"

// QueueFullRetryAfter is the Retry-After of a submit refused with
// ErrQueueFull: about when some of the owner's waiting tasks will have
// started at a modest pace.
const QueueFullRetryAfter = 30 * time.Second

// Validate reports the first bad value of l: a negative cap or rate, or
// a model without a name.
func (l Limits) Validate() error {
	if l.OwnerConcurrency < 0 {
		return fmt.Errorf("OwnerConcurrency must not be negative (got %d)", l.OwnerConcurrency)
	}
	for name, m := range map[string]map[string]int{"ModelConcurrency": l.ModelConcurrency, "ModelRate": l.ModelRate} {
		for model, n := range m {
			switch {
			case model == "":
				return fmt.Errorf("%s: a model needs a name", name)
			case n < 0:
				return fmt.Errorf("%s[%q] must not be negative (got %d)", name, model, n)
			}
		}
	}
	return nil
}

// ModelCap is the concurrency cap of model, 0 for none.
func (l Limits) ModelCap(model string) int { return l.ModelConcurrency[model] }

// ModelStartRate is the starts per minute allowed for model, 0 for no
// rate.
func (l Limits) ModelStartRate(model string) int { return l.ModelRate[model] }

// SetOwnerWeight sets owner's share of the workers when several owners
// have tasks waiting: weight 3 gets three turns for one of weight 1
// (1..MaxOwnerWeight; the default is 1). It is kept in the store, for
// every process, and applies to tasks queued from now on.
func (s *Service) SetOwnerWeight(ctx context.Context, owner string, weight int) error {
	if err := s.cfg.Store.SetOwnerWeight(ctx, owner, weight); err != nil {
		return fmt.Errorf("imagegen: set owner weight: %w", err)
	}
	s.log.InfoContext(ctx, "owner weight set", "owner", owner, "weight", weight)
	return nil
}

// OwnerWeight returns owner's weight (1 unless set).
func (s *Service) OwnerWeight(ctx context.Context, owner string) (int, error) {
	w, err := s.cfg.Store.OwnerWeight(ctx, owner)
	if err != nil {
		return 0, fmt.Errorf("imagegen: owner weight: %w", err)
	}
	return w, nil
}

// SchedulerStats is the store's SchedulerStats under the caps and rates
// of this service's workers: what holds tasks back now, and the owners
// with the most tasks waiting.
func (s *Service) SchedulerStats(ctx context.Context) (SchedulerStats, error) {
	st, err := s.cfg.Store.SchedulerStats(ctx, s.cfg.Limits)
	if err != nil {
		return st, fmt.Errorf("imagegen: scheduler stats: %w", err)
	}
	return st, nil
}

// MaxModelPause is the longest wait a ModelError.RetryAfter is honoured
// for: the pause of its model for every worker, and its task's retry
// delay. A provider that asks for longer (a Retry-After header may say
// years) is paused this long, and paused again by its next 429, so that
// one bad answer cannot stop a model everywhere until an operator
// edits the store.
const MaxModelPause = 10 * time.Minute

// retryAfter is how long the provider of a *ModelError err asked to
// wait, at most MaxModelPause; 0 when it did not ask.
func retryAfter(err error) time.Duration {
	var me *ModelError
	if !errors.As(err, &me) {
		return 0
	}
	return min(max(me.RetryAfter, 0), MaxModelPause)
}

// pauseOnRetryAfter pauses t's model for every worker on the store when
// the provider asked to wait (a 429 with Retry-After).
func (s *Service) pauseOnRetryAfter(ctx context.Context, log *slog.Logger, t *Task, err error) {
	pause := retryAfter(err)
	if pause == 0 {
		return
	}
	if perr := s.cfg.Store.PauseModel(ctx, t.Model, pause); perr != nil {
		log.Warn("could not pause the model after the provider's Retry-After", "pause", pause.String(), "err", perr)
		return
	}
	log.Info("model paused for every worker: the provider asked to wait", "pause", pause.String())
}
