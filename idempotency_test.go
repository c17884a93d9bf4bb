package imagegen_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/matryer/is"
)

// One rule for idempotency keys, on both sides of the wire.
func TestValidIdempotencyKey(t *testing.T) {
	for k, want := range map[string]bool{
		"order-7":          true,
		"a":                true,
		"with inner space": true,
		strings.Repeat("k", imagegen.MaxIdempotencyKey): true,
		"": false,
		strings.Repeat("k", imagegen.MaxIdempotencyKey+1): false,
		" leading":    false,
		"trailing ":   false,
		"tab\tinside": false,
		"newline\n":   false,
		"ünïcode":     false,
		"del\x7f":     false,
	} {
		if got := imagegen.ValidIdempotencyKey(k); got != want {
			t.Errorf("ValidIdempotencyKey(%q) = %v, want %v", k, got, want)
		}
	}
}

// The service's idempotent submit: one task and one charge per key and
// request; refusals (of the request or of state) not kept; a key with
// another request, or still under way, refused.
func TestSubmitIdempotent(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, imagegentest.NewModel(2))
	decodes := 0
	valid := func() (imagegen.Request, error) { decodes++; return textReq, nil }
	once := imagegen.Idempotency{Key: "order-7", Fingerprint: "body-a"}

	_, _, err := f.svc.SubmitIdempotent(ctx, "alice", once, valid)
	is.True(errors.Is(err, imagegen.ErrInsufficientCredits)) // depends on the balance: not kept
	f.funded(t, "alice", 5)
	first, replayed, err := f.svc.SubmitIdempotent(ctx, "alice", once, valid)
	is.NoErr(err)
	is.True(!replayed)
	again, replayed, err := f.svc.SubmitIdempotent(ctx, "alice", once, valid)
	is.NoErr(err)
	is.True(replayed)
	is.Equal(again, first)
	is.Equal(decodes, 2) // a replay decodes nothing
	bal, err := f.svc.Balance(ctx, "alice")
	is.NoErr(err)
	is.Equal(bal, int64(3)) // one charge

	_, _, err = f.svc.SubmitIdempotent(ctx, "alice", imagegen.Idempotency{Key: "order-7", Fingerprint: "body-b"}, valid)
	is.True(errors.Is(err, imagegen.ErrIdempotencyKeyReused))
	var ve *imagegen.ValidationError
	is.True(errors.As(err, &ve))
	is.Equal(ve.Field, "Idempotency-Key")
	_, _, err = f.svc.SubmitIdempotent(ctx, "bob", once, valid) // keys are per owner
	is.True(errors.Is(err, imagegen.ErrInsufficientCredits))

	bad := imagegen.Idempotency{Key: "bad", Fingerprint: "body-c"}
	empty := func() (imagegen.Request, error) { return imagegen.Request{Scene: imagegen.SceneTextToImage}, nil }
	_, replayed, err = f.svc.SubmitIdempotent(ctx, "alice", bad, empty)
	is.True(!replayed)
	is.True(errors.As(err, &ve))
	is.Equal(ve.Error(), "prompt: is required")
	_, replayed, err = f.svc.SubmitIdempotent(ctx, "alice", bad, empty) // the refusal is not kept: validated again
	is.True(!replayed)
	is.True(errors.As(err, &ve))
	is.Equal(ve.Error(), "prompt: is required")

	_, err = f.store.BeginIdempotent(ctx, "alice", "busy", "body-d", "", time.Minute, time.Hour)
	is.NoErr(err)
	_, _, err = f.svc.SubmitIdempotent(ctx, "alice", imagegen.Idempotency{Key: "busy", Fingerprint: "body-d"}, valid)
	is.True(errors.Is(err, imagegen.ErrIdempotencyKeyInUse))

	_, _, err = f.svc.SubmitIdempotent(ctx, "alice", imagegen.Idempotency{Key: " spaced", Fingerprint: "x"}, valid)
	is.True(errors.As(err, &ve))
	is.Equal(ve.Field, "Idempotency-Key")

	none, replayed, err := f.svc.SubmitIdempotent(ctx, "alice", imagegen.Idempotency{}, valid) // no key: a plain submit
	is.NoErr(err)
	is.True(!replayed)
	is.True(none.TaskID != first.TaskID)
}

// A submission whose caller went away still records what it made, so
// that the retry finds it instead of charging again.
func TestSubmitIdempotentRecordsAfterTheCallerLeft(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, imagegentest.NewModel(1))
	f.funded(t, "alice", 5)
	once := imagegen.Idempotency{Key: "k", Fingerprint: "b"}
	gone, leave := context.WithCancel(ctx)
	first, _, err := f.svc.SubmitIdempotent(gone, "alice", once, func() (imagegen.Request, error) {
		leave() // the client hangs up while its task is made
		return textReq, nil
	})
	is.NoErr(err)
	again, replayed, err := f.svc.SubmitIdempotent(ctx, "alice", once, func() (imagegen.Request, error) { return textReq, nil })
	is.NoErr(err)
	is.True(replayed)
	is.Equal(again.TaskID, first.TaskID)
}

// Records written by earlier versions replay alike until they expire:
// the HTTP API's, before the service kept them (its status and body),
// and the service's refusals of a request (status 422), which it no
// longer writes (a store may hold them during and after an upgrade).
func TestSubmitIdempotentReadsEarlierRecords(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, imagegentest.NewModel(1))
	never := func() (imagegen.Request, error) { t.Fatal("decoded a replay"); return imagegen.Request{}, nil }
	for key, rec := range map[string]struct {
		status int
		body   string
	}{
		"made":    {201, `{"task_id":"t-1","status":"pending","credits_used":1,"credits_remaining":4}` + "\n"},
		"refused": {422, `{"error":{"code":"invalid_params","message":"prompt: is required"}}` + "\n"},
		"refusal": {422, `{"field":"prompt","message":"is required","error":{"message":""}}`}, // as the service wrote it
	} {
		_, err := f.store.BeginIdempotent(ctx, "alice", key, "fp", "", time.Minute, time.Hour)
		is.NoErr(err)
		is.NoErr(f.store.FinishIdempotent(ctx, "alice", key, "fp", rec.status, []byte(rec.body), time.Hour))
	}
	sub, replayed, err := f.svc.SubmitIdempotent(ctx, "alice", imagegen.Idempotency{Key: "made", Fingerprint: "fp"}, never)
	is.NoErr(err)
	is.True(replayed)
	is.Equal(sub, imagegen.Submission{TaskID: "t-1", Status: imagegen.StatusPending, CreditsUsed: 1, CreditsRemaining: 4})
	_, replayed, err = f.svc.SubmitIdempotent(ctx, "alice", imagegen.Idempotency{Key: "refused", Fingerprint: "fp"}, never)
	is.True(errors.Is(err, imagegen.ErrInvalidParams))
	is.True(replayed)
	is.Equal(err.Error(), "prompt: is required")
	_, replayed, err = f.svc.SubmitIdempotent(ctx, "alice", imagegen.Idempotency{Key: "refusal", Fingerprint: "fp"}, never)
	var ve *imagegen.ValidationError
	is.True(errors.As(err, &ve))
	is.True(replayed)
	is.Equal(ve.Field, "prompt")
	is.Equal(ve.Message, "is required")
}
