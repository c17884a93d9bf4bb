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
	"github.com/imagegen/imagegen/internal/testenv/redistest"
	redisstore "github.com/imagegen/imagegen/store/redis"
)

// behindHolder is a store (with clock) on IMAGEGEN_TEST_REDIS through a
// proxy that can hold a create's command back, unsent, while its client
// gives up on the reply.
func behindHolder(t *testing.T, clock imagegen.Clock) (*redisstore.Store, *redistest.CommandHolder) {
	t.Helper()
	opt := redistest.Options(t)
	h := redistest.StartCommandHolder(t, opt)
	via := *opt
	via.Addr, via.MaxRetries = h.Addr, 1
	return newIsolated(t, redistest.NewClient(t, &via), redisstore.Config{Clock: clock, Retention: retention}), h
}

// A create whose command was written but whose reply never came (the
// connection cut, every send) may still run: its bytes may sit in the
// network or in the server's socket buffer, and run after a lookup on
// another connection found nothing. Its error says so (it wraps
// ErrOutcomeUnknown), so that no caller takes that lookup for final.
func TestCreateWithNoReplyIsOfUnknownOutcome(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	s, h := behindHolder(t, nil)
	_, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "u", Kind: imagegen.LedgerGrant, Amount: 10, Ref: "g"})
	is.NoErr(err)
	task := &imagegen.Task{ID: imagegen.NewOwnedID("u"), Owner: "u", Cost: 3, Model: "m",
		Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "a fox, held in the network"}}
	h.Arm(task.Request.Prompt) // in the create's arguments alone
	_, err = s.CreateTask(ctx, task, imagegen.CreateParams{})
	is.True(h.Held() > 0) // written, and not run
	is.True(errors.Is(err, imagegen.ErrOutcomeUnknown))
	_, err = s.Task(ctx, "u", task.ID)
	is.True(errors.Is(err, imagegen.ErrTaskNotFound)) // a lookup finds nothing yet

	h.Release(t) // the command arrives at last, and runs
	_, err = s.Task(ctx, "u", task.ID)
	is.NoErr(err)
	b, err := s.Balance(ctx, "u")
	is.NoErr(err)
	is.Equal(b, int64(7)) // charged once, by each send of the one batch
}

// The same through an idempotent submit: the key is kept in flight (not
// given up on the lookup that found nothing), and the retry that finds
// it expired replays the task the held create made. Given up, the key
// let the retry submit afresh: charged twice.
func TestIdempotentSubmitWhoseCreateIsHeldChargesOnce(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	clock := imagegentest.NewClock(time.Time{})
	s, h := behindHolder(t, clock)
	svc, err := imagegen.New(imagegen.Config{Store: s, Model: imagegentest.NewModel(2), Clock: clock, Logger: slog.New(slog.DiscardHandler)})
	is.NoErr(err)
	_, err = s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "u", Kind: imagegen.LedgerGrant, Amount: 10, Ref: "g"})
	is.NoErr(err)
	const prompt = "a fox, held in the network"
	req := func() (imagegen.Request, error) {
		return imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: prompt}, nil
	}
	once := imagegen.Idempotency{Key: "order-1", Fingerprint: "body-a"}

	h.Arm(prompt)
	_, _, err = svc.SubmitIdempotent(ctx, "u", once, req)
	is.True(err != nil)
	is.True(h.Held() > 0)
	h.Release(t) // the create runs after the service's lookup
	clock.Advance(3 * time.Minute)

	sub, replayed, err := svc.SubmitIdempotent(ctx, "u", once, req)
	is.NoErr(err)
	is.True(replayed) // the held create's task
	b, err := s.Balance(ctx, "u")
	is.NoErr(err)
	is.Equal(b, int64(8)) // charged once
	_, err = s.Task(ctx, "u", sub.TaskID)
	is.NoErr(err)
}
