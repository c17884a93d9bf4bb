package fetch

import (
	"context"
	"fmt"
	"io"
	"time"
)

// rateGuard cancels a download that falls behind the minimum rate: by
// grace + n/rate after the request began, at least n bytes of the body
// must have arrived (the headers count against the grace). A host that
// drips bytes is cut off after about grace instead of holding the fetch
// for its whole timeout.
type rateGuard struct {
	start time.Time
	grace time.Duration
	rate  int64 // bytes a second
	timer *time.Timer
	n     int64
}

// guardRate starts the guard for a fetch whose context cancel ends it;
// the cause is an error wrapping ErrTooSlow. stop releases the timer.
func guardRate(cancel context.CancelCauseFunc, grace time.Duration, rate int64) (g *rateGuard, stop func()) {
	g = &rateGuard{start: time.Now(), grace: grace, rate: rate}
	tooSlow := fmt.Errorf("%w: under %d bytes a second", ErrTooSlow, rate)
	g.timer = time.AfterFunc(g.due(1), func() { cancel(tooSlow) })
	return g, func() { g.timer.Stop() }
}

// due is how long from now until byte n must have arrived.
func (g *rateGuard) due(n int64) time.Duration {
	at := g.start.Add(g.grace + time.Duration(float64(n)/float64(g.rate)*float64(time.Second)))
	return time.Until(at)
}

// reader counts the body's bytes and moves the deadline of the next one.
func (g *rateGuard) reader(r io.Reader) io.Reader { return guardedReader{g: g, r: r} }

type guardedReader struct {
	g *rateGuard
	r io.Reader
}

func (gr guardedReader) Read(p []byte) (int, error) {
	n, err := gr.r.Read(p)
	if n > 0 {
		gr.g.n += int64(n)
		gr.g.timer.Reset(gr.g.due(gr.g.n + 1))
	}
	return n, err
}
