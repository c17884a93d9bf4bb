package imagegen

import (
	"context"
	"time"
)

// claimTimeout is how long a claim that Run or RunOnce made may go on
// once its caller's context has ended (see claimUntilStop).
const claimTimeout = 10 * time.Second

// claimContext is the context of Run's claims, made once for the run
// rather than for each claim (RunOnce makes one for its one claim): it
// is not cancelled with ctx but claimTimeout after it, so that a claim
// under way when ctx ends is answered (see claimUntilStop), and a store
// that hangs holds up a shutdown by claimTimeout at most. stop releases
// it.
func (s *Service) claimContext(ctx context.Context) (claimCtx context.Context, stop func()) {
	claimCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stopAfter := context.AfterFunc(ctx, func() { time.AfterFunc(claimTimeout, cancel) })
	return claimCtx, func() {
		stopAfter()
		cancel()
	}
}

// claimUntilStop is claim for Run and RunOnce, made in claimCtx
// (claimContext), not ctx: a claim whose answer a cancellation loses may
// have been made all the same (a Redis script or a PostgreSQL statement that ran before
// the call gave up), and its tasks would stay held by no one until
// their leases ran out, each with an attempt used up (failed and
// refunded on its last one). Tasks claimed as ctx ended are given back
// at once instead, with no attempt counted (Store.ReleaseTask), and the
// claim reports ctx's error.
func (s *Service) claimUntilStop(ctx, claimCtx context.Context, n int) ([]*Task, error) {
	tasks, err := s.claim(claimCtx, n)
	if err != nil || ctx.Err() == nil {
		return tasks, err
	}
	releaseCtx, cancelRelease := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancelRelease()
	for _, t := range tasks {
		err := s.cfg.Store.ReleaseTask(releaseCtx, t.ID, t.Attempt)
		log := s.log.With("task_id", t.ID, "request_id", t.RequestID, "attempt", t.Attempt, "model", t.Model)
		s.logOutcome(log, err, "task released as it was claimed: the claim's caller stopped")
	}
	return nil, ctx.Err()
}
