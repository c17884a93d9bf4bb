package imagegen

import (
	"context"
	"fmt"
	"time"
)

// MaxWait is the longest WaitTask waits.
const MaxWait = 60 * time.Second

// WaitTask returns owner's task as soon as it is finished (success or
// failed), or after d (at most MaxWait) with its state then, whichever
// comes first. It holds nothing once it returns. It waits on the store's
// finish notification (Store.WatchTask); after a spurious one it re-reads
// the task every Config.PollInterval.
func (s *Service) WaitTask(ctx context.Context, owner, id string, d time.Duration) (*Task, error) {
	d = min(d, MaxWait)
	if d <= 0 || !taskIDOK(id) {
		return s.Task(ctx, owner, id)
	}
	finished, stop, err := s.cfg.Store.WatchTask(ctx, id) // watch first, then read: no finish is missed
	if err != nil {
		return nil, fmt.Errorf("imagegen: watch task: %w", err)
	}
	defer stop()
	timeout := s.cfg.Clock.After(d)
	for {
		t, err := s.Task(ctx, owner, id)
		if err != nil || t.Status.Terminal() {
			return t, err
		}
		var recheck <-chan time.Time
		if finished == nil {
			recheck = s.cfg.Clock.After(s.cfg.PollInterval)
		}
		select {
		case <-finished:
			finished = nil // read it once more; if it is not over after all, poll
		case <-recheck:
		case <-timeout:
			return s.Task(ctx, owner, id)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
