package imagegen

import (
	"context"
	"time"
)

// claimTimeout bounds a claim that Run makes, which its context does
// not cut short (see claimUntilStop).
const claimTimeout = 10 * time.Second

// claimUntilStop is claim for Run. The store call is not cut short by
// ctx: a claim whose answer a cancellation loses may have been made all
// the same (a Redis script or a PostgreSQL statement that ran before
// the call gave up), and its tasks would stay held by no one until
// their leases ran out, each with an attempt used up (failed and
// refunded on its last one). Tasks claimed as ctx ended are given back
// at once instead, with no attempt counted (Store.ReleaseTask), and the
// claim reports ctx's error.
func (s *Service) claimUntilStop(ctx context.Context, n int) ([]*Task, error) {
	claimCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), claimTimeout)
	tasks, err := s.claim(claimCtx, n)
	cancel()
	if err != nil || ctx.Err() == nil {
		return tasks, err
	}
	releaseCtx, cancelRelease := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancelRelease()
	for _, t := range tasks {
		err := s.cfg.Store.ReleaseTask(releaseCtx, t.ID, t.Attempt)
		log := s.log.With("task_id", t.ID, "request_id", t.RequestID, "attempt", t.Attempt, "model", t.Model)
		s.logOutcome(log, err, "task released on shutdown, as it was claimed")
	}
	return nil, ctx.Err()
}
