package imagegen_test

import (
	"errors"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
)

// An idempotent submit refused for its content (a body that fails
// validation) keeps no record of its key, on every store (the stores of
// cursorStores: memory, miniredis, and the Redis and PostgreSQL of
// IMAGEGEN_TEST_REDIS and IMAGEGEN_TEST_POSTGRES): such refusals cost
// the caller nothing, so keeping them would let anybody, even a user
// without credits, fill the store with records for a day.

// noPrompt is a request every model refuses: its prompt is missing.
var noPrompt = imagegen.Request{Scene: imagegen.SceneTextToImage}

// refusedService is a Service on store whose user "alice" holds credits.
func refusedService(t *testing.T, store imagegen.Store, credits int64) *imagegen.Service {
	t.Helper()
	is := is.New(t)
	svc, err := imagegen.New(imagegen.Config{Store: store, Model: imagegentest.NewModel(1), Logger: quiet, MaxPending: -1})
	is.NoErr(err)
	if credits > 0 {
		_, err = svc.Grant(ctx, "alice", credits, "alice-grant")
		is.NoErr(err)
	}
	return svc
}

// A refused submit leaves its key free in the store: beginning it again
// (with the refused body's fingerprint, or another's) finds no record.
// The user has no credits, as the one who would abuse the records.
func TestSubmitIdempotentRefusalKeepsNoRecord(t *testing.T) {
	for name, newStore := range cursorStores {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			store := newStore(t)
			svc := refusedService(t, store, 0)
			_, replayed, err := svc.SubmitIdempotent(ctx, "alice", imagegen.Idempotency{Key: "order-1", Fingerprint: "bad-body"},
				func() (imagegen.Request, error) { return noPrompt, nil })
			var ve *imagegen.ValidationError
			is.True(errors.As(err, &ve)) // refused for its content
			is.Equal(ve.Field, "prompt")
			is.True(!replayed)

			for _, fp := range []string{"bad-body", "good-body"} {
				rec, err := store.BeginIdempotent(ctx, "alice", "order-1", fp, "", time.Minute, time.Hour)
				is.NoErr(err)
				is.True(rec == nil) // no record: the key was free
				is.NoErr(store.AbandonIdempotent(ctx, "alice", "order-1", fp))
			}
		})
	}
}

// The same key with the same refused body is validated again and
// refused again with the same field, not replayed from a record.
func TestSubmitIdempotentRefusalIsValidatedAgain(t *testing.T) {
	for name, newStore := range cursorStores {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			svc := refusedService(t, newStore(t), 0)
			decodes := 0
			bad := func() (imagegen.Request, error) { decodes++; return noPrompt, nil }
			once := imagegen.Idempotency{Key: "order-1", Fingerprint: "bad-body"}
			for try := 1; try <= 2; try++ {
				_, replayed, err := svc.SubmitIdempotent(ctx, "alice", once, bad)
				var ve *imagegen.ValidationError
				is.True(errors.As(err, &ve))
				is.True(errors.Is(err, imagegen.ErrInvalidParams))
				is.Equal(ve.Field, "prompt")
				is.Equal(ve.Error(), "prompt: is required")
				is.True(!replayed)     // refused afresh, not replayed
				is.Equal(decodes, try) // decoded and validated each time
			}
		})
	}
}

// After a refusal, the same key with a corrected body is a new request:
// it makes one task, charged once, which replays of the key answer; the
// refused body is then the key reused with another request.
func TestSubmitIdempotentRefusedKeyTakesCorrectedBody(t *testing.T) {
	for name, newStore := range cursorStores {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			svc := refusedService(t, newStore(t), 5)
			bad := func() (imagegen.Request, error) { return noPrompt, nil }
			decodes := 0
			good := func() (imagegen.Request, error) { decodes++; return textReq, nil }
			_, _, err := svc.SubmitIdempotent(ctx, "alice", imagegen.Idempotency{Key: "order-1", Fingerprint: "bad-body"}, bad)
			is.True(errors.Is(err, imagegen.ErrInvalidParams))

			corrected := imagegen.Idempotency{Key: "order-1", Fingerprint: "good-body"}
			first, replayed, err := svc.SubmitIdempotent(ctx, "alice", corrected, good)
			is.NoErr(err) // not "key reused with another request"
			is.True(!replayed)
			is.True(first.TaskID != "")
			is.True(first.CreditsUsed > 0)
			is.Equal(first.CreditsRemaining, 5-first.CreditsUsed)
			for range 2 {
				again, replayed, err := svc.SubmitIdempotent(ctx, "alice", corrected, good)
				is.NoErr(err)
				is.True(replayed)
				is.Equal(again, first) // the same task
			}
			is.Equal(decodes, 1) // the replays decoded nothing
			bal, err := svc.Balance(ctx, "alice")
			is.NoErr(err)
			is.Equal(bal, 5-first.CreditsUsed) // charged once
			page, err := svc.ListTasks(ctx, "alice", "", 10, "")
			is.NoErr(err)
			is.Equal(len(page.Tasks), 1) // one task made

			_, _, err = svc.SubmitIdempotent(ctx, "alice", imagegen.Idempotency{Key: "order-1", Fingerprint: "bad-body"}, bad)
			is.True(errors.Is(err, imagegen.ErrIdempotencyKeyReused)) // the key is now the corrected body's
		})
	}
}
