package imagegen

import "context"

// claimedUnreadable logs the tasks a claim leased but could not read,
// and counts those the store failed and refunded as Recover counts the
// tasks it fails (Observer.TaskFinished with CodeInternal,
// Observer.CreditsRefunded): the store has no logger, and an error
// that only the claim returned would be lost with its batch.
func (s *Service) claimedUnreadable(ctx context.Context, e *UnreadableTasksError) {
	for _, t := range e.Tasks {
		log := s.log.With("task_id", t.ID, "model", t.Model, "attempt", t.Attempt, "err", t.Err)
		if !t.Failed {
			log.ErrorContext(ctx, "claimed task could not be read, nor failed; it stays leased until its lease expires (failed after MaxAttempts)",
				"fail_err", t.FailErr)
			continue
		}
		s.cfg.Observer.TaskFinished(t.Model, StatusFailed, CodeInternal, 0)
		if t.Refund > 0 {
			s.cfg.Observer.CreditsRefunded(t.Refund)
		}
		log.ErrorContext(ctx, "claimed task could not be read; failed and refunded", "refunded", t.Refund)
	}
}
