// Package drain cuts a server's long waits short when it begins to shut
// down: a request waiting for something to happen (a long-poll) answers
// at once with things as they stand, so that http.Server.Shutdown is not
// held up by it. The API's "Prefer: wait" and the console's task pages
// share it.
package drain

import "context"

// Waits is the drain of one server's long waits. Make it with New; it is
// safe for concurrent use.
type Waits struct {
	done context.Context // ends when Drain is called
	stop context.CancelFunc
}

// New returns Waits that Drain has not cut short yet.
func New() *Waits {
	done, stop := context.WithCancel(context.Background())
	return &Waits{done: done, stop: stop}
}

// Drain cuts every wait short, those under way and those to come. It is
// safe to call more than once and from any goroutine.
func (w *Waits) Drain() { w.stop() }

// Drained reports whether Drain has been called.
func (w *Waits) Drained() bool { return w.done.Err() != nil }

// Context returns ctx, cancelled also when Drain is called; stop
// releases it.
func (w *Waits) Context(ctx context.Context) (_ context.Context, stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	unhook := context.AfterFunc(w.done, cancel)
	return ctx, func() { unhook(); cancel() }
}

// Wait runs wait on a context that Drain cuts short, and answers with
// now (things as they stand) instead when Drain cut it short, or had
// been called before, rather than with the wait's error; when ctx ends,
// it answers as wait did.
func Wait[T any](ctx context.Context, w *Waits, wait, now func(context.Context) (T, error)) (T, error) {
	if w.Drained() {
		return now(ctx)
	}
	waitCtx, stop := w.Context(ctx)
	defer stop()
	v, err := wait(waitCtx)
	if err != nil && ctx.Err() == nil && w.Drained() {
		return now(ctx) // drained, not failed
	}
	return v, err
}
