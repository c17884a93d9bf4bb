package redis_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	redisstore "github.com/imagegen/imagegen/store/redis"
)

// A create that too few replicas confirmed (ErrNotReplicated) got its
// script's reply: the task was made on the master, and a lookup finds
// it. Its error is not of unknown outcome, so an idempotent submit looks
// for the task at once and keeps it under the key: the retry replays
// it (as the README says), rather than getting 409 for two minutes.
func TestNotReplicatedCreateIsNotOfUnknownOutcome(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	clock := imagegentest.NewClock(time.Time{})
	s := newIsolated(t, realRedis(t), redisstore.Config{Clock: clock, Retention: retention, WaitReplicas: 1, WaitTimeout: 20 * time.Millisecond})
	_, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "u", Kind: imagegen.LedgerGrant, Amount: 10, Ref: "g"})
	is.True(errors.Is(err, redisstore.ErrNotReplicated)) // made on the master

	task := &imagegen.Task{ID: imagegen.NewOwnedID("u"), Owner: "u", Cost: 3, Model: "m",
		Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "a fox"}}
	_, err = s.CreateTask(ctx, task, imagegen.CreateParams{})
	is.True(errors.Is(err, redisstore.ErrNotReplicated))
	is.True(!errors.Is(err, imagegen.ErrOutcomeUnknown)) // its reply was read: it ran

	svc, err := imagegen.New(imagegen.Config{Store: s, Model: imagegentest.NewModel(2), Clock: clock, Logger: slog.New(slog.DiscardHandler)})
	is.NoErr(err)
	req := func() (imagegen.Request, error) {
		return imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "a fox"}, nil
	}
	once := imagegen.Idempotency{Key: "order-1", Fingerprint: "body-a"}
	_, _, err = svc.SubmitIdempotent(ctx, "u", once, req)
	is.True(errors.Is(err, redisstore.ErrNotReplicated))
	sub, replayed, err := svc.SubmitIdempotent(ctx, "u", once, req) // retried at once
	is.NoErr(err)
	is.True(replayed) // the task the first try made
	b, err := s.Balance(ctx, "u")
	is.NoErr(err)
	is.Equal(b, int64(10-3-2)) // the store's task and the submit's, each once
	_, err = s.Task(ctx, "u", sub.TaskID)
	is.NoErr(err)
}
