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

// CancelLostSubmit settles the task a failed submit may have made, for
// a caller that will not come back for it (such as the OpenAI-compatible
// endpoint, whose clients retry a 500 with a fresh submit): when err is
// a *SubmitUnknownError it cancels (and so refunds) the task it names.
// When the store's error wraps ErrOutcomeUnknown the write may land
// after this first cancel found no task (or failed); then a goroutine tries the
// cancel again, on the service's Clock, until it cancels the task, finds
// it already ended, or has tried lostSubmitTries times (about four
// minutes), logging what it did, and stops. Any other err is ignored.
// ctx gives the logs' values; its cancellation does not stop the cancels.
func (s *Service) CancelLostSubmit(ctx context.Context, owner string, err error) {
	var lost *SubmitUnknownError
	if !errors.As(err, &lost) {
		return
	}
	ctx = context.WithoutCancel(ctx)
	cerr := s.Cancel(ctx, owner, lost.TaskID)
	late := errors.Is(err, ErrOutcomeUnknown) && cerr != nil && !errors.Is(cerr, ErrInvalidTransition)
	if cerr != nil && !errors.Is(cerr, ErrTaskNotFound) {
		s.log.ErrorContext(ctx, "cancel the task of a lost submit", "task_id", lost.TaskID, "err", cerr)
	}
	if late {
		s.log.WarnContext(ctx, "lost submit of unknown outcome: cancelling its task should it land later", "task_id", lost.TaskID)
		go s.cancelLateTask(ctx, owner, lost.TaskID)
	}
}

// cancelLateTask is CancelLostSubmit's goroutine: it cancels task id
// should its create land after the first cancel, then stops.
func (s *Service) cancelLateTask(ctx context.Context, owner, id string) {
	wait, err := lostSubmitFirstWait, error(nil)
	for range lostSubmitTries {
		<-s.cfg.Clock.After(wait)
		wait *= 2
		err = s.Cancel(ctx, owner, id)
		switch {
		case err == nil:
			s.log.WarnContext(ctx, "the task of a lost submit landed late: cancelled", "task_id", id)
			return
		case errors.Is(err, ErrInvalidTransition):
			s.log.WarnContext(ctx, "the task of a lost submit landed late and had ended before it could be cancelled", "task_id", id)
			return
		case !errors.Is(err, ErrTaskNotFound):
			s.log.ErrorContext(ctx, "cancel the task of a lost submit", "task_id", id, "err", err)
		}
	}
	if errors.Is(err, ErrTaskNotFound) {
		s.log.InfoContext(ctx, "the task of a lost submit did not land: nothing to cancel", "task_id", id)
		return
	}
	s.log.ErrorContext(ctx, "gave up cancelling the task of a lost submit", "task_id", id, "err", err)
}
