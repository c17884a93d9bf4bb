package imagegen_test

import (
	"errors"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
)

// A submission of unknown outcome whose task ran and was then removed
// by retention (an hour here) while its key's record, kept for
// Config.IdempotencyTTL (a day), still named it: the retry that settles
// the key asks the store for the task's id again, which the store
// refuses as charged already (ErrDuplicateEntry). The key then keeps
// that task's submission, replayed, so that neither this retry nor a
// later one charges the owner a second time; giving the key up let the
// next retry submit afresh and pay again.
func TestSubmitIdempotentAfterItsTaskExpiredChargesOnce(t *testing.T) {
	is := is.New(t)
	lost := &answerLost{made: true, lookupErr: errors.New("store unreachable"), errNotSent: errors.New("timeout after the write")}
	f := newFixture(t, imagegentest.NewModel(2), func(cfg *imagegen.Config) { lost.Store = cfg.Store; cfg.Store = lost })
	f.funded(t, "alice", 5)
	once := imagegen.Idempotency{Key: "order-11", Fingerprint: "body-a"}
	req := func() (imagegen.Request, error) { return textReq, nil }

	_, _, err := f.svc.SubmitIdempotent(ctx, "alice", once, req)
	is.True(err != nil) // unknown: the key stays in flight
	lost.lookupErr, lost.errNotSent = nil, nil

	// The task the first try made runs, and retention removes it.
	c, err := lost.Store.ClaimTask(ctx, time.Minute)
	is.NoErr(err)
	is.NoErr(lost.Store.CompleteTask(ctx, c.ID, c.Attempt, nil, nil))
	f.clock.Advance(2 * time.Hour)
	_, err = lost.Store.Task(ctx, "alice", c.ID)
	is.True(errors.Is(err, imagegen.ErrTaskNotFound))

	for range 2 { // the retry that settles the key, and one more
		sub, replayed, err := f.svc.SubmitIdempotent(ctx, "alice", once, req)
		is.NoErr(err)
		is.True(replayed)
		is.Equal(sub.TaskID, c.ID) // the first try's task
		is.Equal(sub.CreditsUsed, int64(2))
		bal, err := f.svc.Balance(ctx, "alice")
		is.NoErr(err)
		is.Equal(bal, int64(3)) // charged once
	}
}
