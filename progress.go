package imagegen

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"
)

// ProgressInterval is how often, at most, the service writes a running
// task's progress to the store (Store.SetProgress): a model may report
// on every sampling step, but a task costs at most one progress write
// per interval (a 30-second generation about 15), and none when its
// progress moved by less than MinProgressStep.
const ProgressInterval = 2 * time.Second

// MinProgressStep is the least change of progress worth a write.
const MinProgressStep = 0.01

// progressWriter keeps one attempt's progress in the store, rarely: it
// is Generation.Progress for that attempt.
type progressWriter struct {
	ctx     context.Context // the generation's
	store   TaskStore
	clock   Clock
	log     *slog.Logger
	id      string
	attempt int

	mu      sync.Mutex
	at      time.Time // of the last write; zero before the first
	written float64
}

// report writes p when ProgressInterval has passed since the last write
// and p moved by MinProgressStep; otherwise it drops it (a later report
// carries the news). A failed write is logged at debug level and
// dropped: progress is for display, and the lease renewal notices a
// lost lease.
func (w *progressWriter) report(p float64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.clock.Now()
	if !w.at.IsZero() && now.Sub(w.at) < ProgressInterval || p-w.written < MinProgressStep && w.written-p < MinProgressStep {
		return
	}
	ctx, cancel := context.WithTimeout(w.ctx, 5*time.Second)
	defer cancel()
	if err := w.store.SetProgress(ctx, w.id, w.attempt, p); err != nil {
		if !errors.Is(err, ErrLeaseLost) && w.ctx.Err() == nil {
			w.log.Debug("recording progress failed", "err", err)
		}
		return
	}
	w.at, w.written = now, p
}
