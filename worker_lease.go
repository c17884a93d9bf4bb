package imagegen

import (
	"context"
	"errors"
	"log/slog"
)

// heldLease keeps a claimed task's lease renewed from the claim until
// its attempt's outcome is stored: through the generation, the wait for
// a place among the outcomes to store (Run's backlog) and the storing
// itself (the image bytes, one BlobStore call after another, each
// bounded by Config.BlobTimeout, then the success; or the retry, the
// failure, the release). A renewer that stopped with the generation let
// a slow BlobStore outlast the lease: Recover requeued the task,
// another worker generated it again (a second provider charge), and the
// first worker's success failed with ErrLeaseLost.
type heldLease struct {
	lost context.Context // done once a renewal found the lease lost
	stop context.CancelFunc
	done chan struct{}
}

// holdLease starts renewing t's lease, every third of
// Config.LeaseDuration, until release. The renewals do not end with ctx
// (an outcome is stored after a shutdown too, see record): release ends
// them, and cancels one under way.
func (s *Service) holdLease(ctx context.Context, t *Task, log *slog.Logger) *heldLease {
	renewCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	lost, markLost := context.WithCancel(context.WithoutCancel(ctx))
	l := &heldLease{lost: lost, stop: stop, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		if s.renewLease(renewCtx, t, log) {
			markLost()
		}
	}()
	return l
}

// cancelOnLoss cancels the generation (cancel) if the lease is lost
// while it runs; stop ends that watch once the generation has ended, so
// a lease lost while the outcome is stored cancels nothing: the store
// call that records it reports ErrLeaseLost itself.
func (l *heldLease) cancelOnLoss(cancel context.CancelFunc, log *slog.Logger) (stop func() bool) {
	return context.AfterFunc(l.lost, func() {
		log.Warn("lease lost; cancelling the generation")
		cancel()
	})
}

// release stops the renewals and waits for the renewer to end. Call it
// once the outcome is stored (or storing it has failed).
func (l *heldLease) release() {
	l.stop()
	<-l.done
}

// renewLease extends t's lease every third of its duration until ctx
// ends, and reports whether it ended because the lease was lost: taken
// from this attempt, or ended before a renewal reached the store (the
// worker stalled, or the store was out of reach, for a lease's length),
// which the store refuses to renew (Store.RenewLease) since the task's
// slot may be another's by then. A renewal that fails otherwise is
// logged and tried again a quarter of the period later (a twelfth of the
// lease), so that a store out of reach for less than 7/12 of the lease,
// wherever the outage starts, still finds the lease renewed before it
// ends (at the next third only, 1/3).
func (s *Service) renewLease(ctx context.Context, t *Task, log *slog.Logger) (lost bool) {
	every := s.cfg.LeaseDuration / 3
	next := every
	for {
		select {
		case <-ctx.Done():
			return false
		case <-s.cfg.Clock.After(next):
		}
		err := s.cfg.Store.RenewLease(ctx, t.ID, t.Attempt, s.cfg.LeaseDuration)
		switch {
		case err == nil:
			next = every
		case errors.Is(err, ErrLeaseLost):
			return true
		case ctx.Err() != nil:
			return false
		default:
			next = every / 4
			log.Warn("lease renewal failed; will try again", "err", err, "in", next)
		}
	}
}
