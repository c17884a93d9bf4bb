package imagegen

import (
	"context"
	"errors"
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

// claimedWithError reports the error a claim returned along with the
// tasks it claimed, and returns true when it did (the claim then has
// no error for its caller): an *UnreadableTasksError
// (claimedUnreadable), a *PartialClaimError (logged: the claim could
// not ask a part of the store after others gave tasks), or any error
// that came with tasks (a store that returned them with one it does not
// name: logged). The tasks are claimed: the caller runs them. Before,
// a *PartialClaimError, not known here, made the worker drop its tasks
// with the error, leased to no one until their leases ran out.
func (s *Service) claimedWithError(ctx context.Context, err error, claimed int) bool {
	if err == nil {
		return false
	}
	var unreadable *UnreadableTasksError
	if errors.As(err, &unreadable) {
		s.claimedUnreadable(ctx, unreadable)
	}
	var partial *PartialClaimError
	if errors.As(err, &partial) {
		s.log.ErrorContext(ctx, "claim could not ask part of the store; the tasks it claimed elsewhere are run, and tasks it may have leased there stay leased until their leases expire",
			"part", partial.Part, "err", partial.Err, "claimed", claimed)
	}
	if unreadable == nil && partial == nil {
		if claimed == 0 {
			return false
		}
		s.log.ErrorContext(ctx, "claim returned tasks with an error; the tasks are run", "err", err, "claimed", claimed)
	}
	return true
}
