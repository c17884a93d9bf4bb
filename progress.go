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

// progressWriteTimeout bounds one progress write.
const progressWriteTimeout = 5 * time.Second

// progressWriter keeps one attempt's progress in the store, rarely: it
// is Generation.Progress for that attempt. The writes run on a goroutine
// of their own, one at a time, so that a slow store never holds up the
// model's callback (ComfyUI's websocket reader, for one); a report that
// arrives while a write is under way waits for it, and a later one
// replaces it (the latest value wins). stop ends the writes.
type progressWriter struct {
	ctx     context.Context // the generation's; its end cancels a write under way
	store   TaskStore
	clock   Clock
	log     *slog.Logger
	id      string
	attempt int

	mu       sync.Mutex
	at       time.Time // of the last report taken; zero before the first
	taken    float64   // the last report taken
	next     float64   // the report to write next, when queued
	queued   bool
	writing  bool          // a writer goroutine runs
	finished chan struct{} // closed when the latest writer goroutine returns
	stopped  bool
}

// report takes p when ProgressInterval has passed since the last report
// taken and p moved by MinProgressStep from it, and queues it for the
// writer; otherwise it drops it (a later report carries the news). It
// never waits for the store. A failed write is logged at debug level
// and dropped: progress is for display, and the lease renewal notices a
// lost lease.
func (w *progressWriter) report(p float64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.clock.Now()
	if w.stopped || !w.at.IsZero() && now.Sub(w.at) < ProgressInterval || p-w.taken < MinProgressStep && w.taken-p < MinProgressStep {
		return
	}
	w.at, w.taken = now, p
	w.next, w.queued = p, true
	if !w.writing {
		w.writing = true
		w.finished = make(chan struct{})
		go w.write(w.finished)
	}
}

// write writes the queued reports, one at a time, until none is left or
// the writer is stopped; it closes finished when it returns.
func (w *progressWriter) write(finished chan struct{}) {
	defer close(finished)
	for {
		w.mu.Lock()
		if !w.queued || w.stopped {
			w.writing = false
			w.mu.Unlock()
			return
		}
		p := w.next
		w.queued = false
		w.mu.Unlock()

		ctx, cancel := context.WithTimeout(w.ctx, progressWriteTimeout)
		err := w.store.SetProgress(ctx, w.id, w.attempt, p)
		cancel()
		if err != nil && !errors.Is(err, ErrLeaseLost) && w.ctx.Err() == nil {
			w.log.Debug("recording progress failed", "err", err)
		}
	}
}

// stop drops the queued report and returns once no write is under way;
// later reports are dropped. The attempt has ended: its outcome is
// recorded after stop, so no progress is written after it. A write
// under way ends with the generation's context, cancelled first.
func (w *progressWriter) stop() {
	w.mu.Lock()
	w.stopped = true
	finished := w.finished
	w.mu.Unlock()
	if finished != nil {
		<-finished
	}
}
