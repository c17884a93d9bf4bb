package imagegen_test

import (
	"errors"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/matryer/is"
)

// A key kept in flight because its submit's outcome was unknown is
// taken over by a retry once its in-flight time has run out. The retry
// settles what the earlier attempt asked for first: its task landed
// after all, so the key replays it, with no second task and no second
// charge. (It used to submit afresh, with a new task id: charged twice.)
func TestSubmitIdempotentTakeOverReplaysTheTaskThatLanded(t *testing.T) {
	is := is.New(t)
	f, late := lateFixture(t)
	once := imagegen.Idempotency{Key: "order-7", Fingerprint: "body-a"}
	decodes := 0
	req := func() (imagegen.Request, error) { decodes++; return textReq, nil }

	_, _, err := f.svc.SubmitIdempotent(ctx, "alice", once, req)
	is.True(errors.Is(err, imagegen.ErrOutcomeUnknown))
	asked := late.asked[0].ID
	late.land(t) // it committed after all
	f.clock.Advance(3 * time.Minute)

	sub, replayed, err := f.svc.SubmitIdempotent(ctx, "alice", once, req)
	is.NoErr(err)
	is.True(replayed)           // the task that landed, not a new one
	is.Equal(sub.TaskID, asked) // the earlier attempt's
	is.Equal(sub.CreditsUsed, int64(2))
	is.Equal(len(late.asked), 0) // nothing asked of the store again
	is.Equal(decodes, 1)
	again, replayed, err := f.svc.SubmitIdempotent(ctx, "alice", once, req)
	is.NoErr(err)
	is.True(replayed) // settled: the key keeps it
	is.Equal(again.TaskID, asked)

	_, _, err = f.svc.SubmitIdempotent(ctx, "alice", imagegen.Idempotency{Key: "order-7", Fingerprint: "body-b"}, req)
	is.True(errors.Is(err, imagegen.ErrIdempotencyKeyReused)) // the key is the first request's
	bal, err := f.svc.Balance(ctx, "alice")
	is.NoErr(err)
	is.Equal(bal, int64(3)) // charged once
}

// The same take-over when the earlier attempt's task never landed: the
// retry submits afresh, under the task id the earlier attempt asked
// for, so that a write of the earlier attempt landing later still is
// refused as the id taken rather than charged a second time.
func TestSubmitIdempotentTakeOverSubmitsUnderTheSameID(t *testing.T) {
	is := is.New(t)
	f, late := lateFixture(t)
	once := imagegen.Idempotency{Key: "order-8", Fingerprint: "body-a"}
	req := func() (imagegen.Request, error) { return textReq, nil }

	_, _, err := f.svc.SubmitIdempotent(ctx, "alice", once, req)
	is.True(errors.Is(err, imagegen.ErrOutcomeUnknown))
	first := late.asked[0]
	late.asked = nil
	f.clock.Advance(3 * time.Minute)

	_, _, err = f.svc.SubmitIdempotent(ctx, "alice", once, req) // the store loses this one's outcome too
	is.True(errors.Is(err, imagegen.ErrOutcomeUnknown))
	is.Equal(late.asked[0].ID, first.ID) // the same task asked for again
	late.land(t)
	_, err = late.Store.CreateTask(ctx, first, imagegen.CreateParams{}) // the first attempt's write, landing at last
	is.True(err != nil)                                                 // refused: the id is taken
	f.clock.Advance(3 * time.Minute)

	sub, replayed, err := f.svc.SubmitIdempotent(ctx, "alice", once, req)
	is.NoErr(err)
	is.True(replayed)
	is.Equal(sub.TaskID, first.ID)
	bal, err := f.svc.Balance(ctx, "alice")
	is.NoErr(err)
	is.Equal(bal, int64(3)) // charged once
}

// A take-over by another request (another fingerprint) after the
// earlier attempt's task landed is refused as the key reused, and the
// key keeps the earlier request's task.
func TestSubmitIdempotentTakeOverByAnotherRequest(t *testing.T) {
	is := is.New(t)
	f, late := lateFixture(t)
	req := func() (imagegen.Request, error) { return textReq, nil }

	_, _, err := f.svc.SubmitIdempotent(ctx, "alice", imagegen.Idempotency{Key: "order-9", Fingerprint: "body-a"}, req)
	is.True(errors.Is(err, imagegen.ErrOutcomeUnknown))
	asked := late.asked[0].ID
	late.land(t)
	f.clock.Advance(3 * time.Minute)

	_, _, err = f.svc.SubmitIdempotent(ctx, "alice", imagegen.Idempotency{Key: "order-9", Fingerprint: "body-b"}, req)
	is.True(errors.Is(err, imagegen.ErrIdempotencyKeyReused))
	sub, replayed, err := f.svc.SubmitIdempotent(ctx, "alice", imagegen.Idempotency{Key: "order-9", Fingerprint: "body-a"}, req)
	is.NoErr(err)
	is.True(replayed)
	is.Equal(sub.TaskID, asked)
	bal, err := f.svc.Balance(ctx, "alice")
	is.NoErr(err)
	is.Equal(bal, int64(3))

	// When the earlier request's task never landed, the key is freed
	// for the other request, which asks for a task of its own.
	_, _, err = f.svc.SubmitIdempotent(ctx, "alice", imagegen.Idempotency{Key: "order-10", Fingerprint: "body-a"}, req)
	is.True(errors.Is(err, imagegen.ErrOutcomeUnknown))
	first := late.asked[0].ID
	late.asked = nil
	f.clock.Advance(3 * time.Minute)
	_, _, err = f.svc.SubmitIdempotent(ctx, "alice", imagegen.Idempotency{Key: "order-10", Fingerprint: "body-b"}, req)
	is.True(errors.Is(err, imagegen.ErrOutcomeUnknown)) // submitted (the store loses this outcome too)
	is.Equal(len(late.asked), 1)
	is.True(late.asked[0].ID != first)
	_, _, err = f.svc.SubmitIdempotent(ctx, "alice", imagegen.Idempotency{Key: "order-10", Fingerprint: "body-a"}, req)
	is.True(errors.Is(err, imagegen.ErrIdempotencyKeyReused)) // the key is body-b's now
}
