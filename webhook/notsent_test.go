package webhook_test

import (
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/fetch"
	"github.com/imagegen/imagegen/webhook"
)

// failingRender is renderStatus failing its first n calls (n < 0: every
// call), as a renderer of ours with a bug or a dependency down would.
func failingRender(n int) func(*imagegen.Task) ([]byte, error) {
	var calls atomic.Int32
	return func(t *imagegen.Task) ([]byte, error) {
		if c := int(calls.Add(1)); n < 0 || c <= n {
			return nil, errors.New("render: template broken")
		}
		return renderStatus(t)
	}
}

// notSentRig is a fixture whose dispatcher (MaxAttempts 3, Backoff 5s)
// renders with render and records its outcomes.
func notSentRig(t *testing.T, render func(*imagegen.Task) ([]byte, error)) (*fixture, *webhook.Dispatcher, *outcomes) {
	is := is.New(t)
	f := newFixture(t, true)
	seen := &outcomes{}
	poster, err := fetch.New(fetch.Config{AllowPrivate: true})
	is.NoErr(err)
	disp, err := webhook.NewDispatcher(webhook.Config{
		Service: f.svc, Store: f.store, Poster: poster, Clock: f.clock, Logger: slog.New(slog.DiscardHandler),
		MaxAttempts: 3, Render: render, Observer: seen,
	})
	is.NoErr(err)
	f.finishedTask(t)
	return f, disp, seen
}

// An attempt that failed on our side before anything was sent (here the
// render) does not use up the receiver's attempts: three such failures,
// as many as MaxAttempts, and the callback is still delivered after.
// Each backs off.
func TestFailureBeforeSendingIsNotCountedAsAnAttempt(t *testing.T) {
	is := is.New(t)
	f, disp, seen := notSentRig(t, failingRender(3))
	for i := range 4 {
		n, err := disp.RunOnce(ctx)
		is.NoErr(err)
		is.Equal(n, 1) // due again after its backoff
		if i < 3 {
			n, err = disp.RunOnce(ctx)
			is.NoErr(err)
			is.Equal(n, 0) // it backs off, not due at once
		}
		f.clock.Advance(time.Hour)
	}
	is.Equal(len(f.recv.got()), 1) // delivered in the end
	is.Equal(seen.list(), []string{"not_sent", "not_sent", "not_sent", "delivered"})
}

// A failure before sending that never heals is still given up: after
// MaxAttempts of them in a row, they count as attempts, and MaxAttempts
// of those give the delivery up. It never loops for ever.
func TestFailureBeforeSendingIsBounded(t *testing.T) {
	is := is.New(t)
	f, disp, seen := notSentRig(t, failingRender(-1))
	runs := 0
	for ; runs < 20; runs++ {
		n, err := disp.RunOnce(ctx)
		is.NoErr(err)
		if n == 0 {
			break
		}
		f.clock.Advance(time.Hour)
	}
	is.Equal(runs, 6)
	is.Equal(seen.list(), []string{"not_sent", "not_sent", "not_sent", "retry", "retry", "given_up"})
	is.Equal(len(f.recv.got()), 0)
}
