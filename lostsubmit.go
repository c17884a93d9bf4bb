package imagegen

import (
	"context"
	"errors"
	"time"
)

// How CancelLostSubmit keeps trying when the store's write may land
// late: lostSubmitTries more cancels, the first lostSubmitFirstWait
// after the first, each wait twice the one before (1 s, 2 s, … 128 s:
// the last about four minutes on). The stores settle such a write well
// within that: PostgreSQL's batch within its settle timeout (about 20 s
// after the call), a Redis command left in a socket buffer within the
// server's next turns or never.
const (
	lostSubmitTries     = 8
	lostSubmitFirstWait = time.Second
)

// maxLateCancels bounds the lost submits whose tasks CancelLostSubmit
// keeps cancelling at once; past it, one is logged and left.
const maxLateCancels = 10000

// CancelLostSubmit settles the task a failed submit may have made, for
// a caller that will not come back for it (such as the OpenAI-compatible
// endpoint, whose clients retry a 500 with a fresh submit): when err is
// a *SubmitUnknownError it cancels the task it names and refunds it in
// full, even one a worker has begun: the server lost the submit's
// answer, so its caller never had the task (cancelLost).
// When the store's error wraps ErrOutcomeUnknown the write may land
// after this first cancel found no task (or failed); then the service
// tries the cancel again, on its Clock, until it cancels the task, finds
// it already ended, or has tried lostSubmitTries times (about four
// minutes), logging what it did. The tries of all lost submits run on
// one goroutine, which ends when none is left: a store outage that loses
// many submits costs an entry each (at most maxLateCancels), not a
// goroutine each, and the store one cancel at a time.
// ctx gives the logs' values; its cancellation does not stop the cancels.
func (s *Service) CancelLostSubmit(ctx context.Context, owner string, err error) {
	var lost *SubmitUnknownError
	if !errors.As(err, &lost) {
		return
	}
	ctx = context.WithoutCancel(ctx)
	cerr := s.cancelLost(ctx, owner, lost.TaskID)
	late := errors.Is(err, ErrOutcomeUnknown) && cerr != nil && !errors.Is(cerr, ErrInvalidTransition)
	if cerr != nil && !errors.Is(cerr, ErrTaskNotFound) {
		s.log.ErrorContext(ctx, "cancel the task of a lost submit", "task_id", lost.TaskID, "err", cerr)
	}
	if late {
		s.late.add(s, lateCancel{ctx: ctx, owner: owner, id: lost.TaskID})
	}
}

// cancelLost cancels the task of a lost submit and refunds it in full,
// a running one too: the cancel is the service's choice.
func (s *Service) cancelLost(ctx context.Context, owner, id string) error {
	_, err := s.CancelWith(ctx, owner, id, CancelParams{})
	return err
}

// tryLateCancel is one more cancel of c's task; it reports whether to
// try again (the task not found yet, or the cancel failed).
func (s *Service) tryLateCancel(c *lateCancel) (again bool) {
	ctx, id := c.ctx, c.id
	err := s.cancelLost(ctx, c.owner, id)
	c.tries++
	switch {
	case err == nil:
		s.log.WarnContext(ctx, "the task of a lost submit landed late: cancelled", "task_id", id)
		return false
	case errors.Is(err, ErrInvalidTransition):
		s.log.WarnContext(ctx, "the task of a lost submit landed late and had ended before it could be cancelled", "task_id", id)
		return false
	case !errors.Is(err, ErrTaskNotFound):
		s.log.ErrorContext(ctx, "cancel the task of a lost submit", "task_id", id, "err", err)
	}
	if c.tries < lostSubmitTries {
		return true
	}
	if errors.Is(err, ErrTaskNotFound) {
		s.log.InfoContext(ctx, "the task of a lost submit did not land: nothing to cancel", "task_id", id)
	} else {
		s.log.ErrorContext(ctx, "gave up cancelling the task of a lost submit", "task_id", id, "err", err)
	}
	return false
}
