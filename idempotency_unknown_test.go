package imagegen_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/matryer/is"
)

// answerLost is a store whose submits fail after the write (as a
// timeout after the write, or replicas that did not confirm, do): the
// task is made and charged, and the caller is told of an error.
type answerLost struct {
	imagegen.Store
	made       bool  // CreateTask writes before it fails
	lookupErr  error // Task's answer while set
	errNotSent error // what CreateTask answers
}

func (a *answerLost) CreateTask(ctx context.Context, t *imagegen.Task, p imagegen.CreateParams) (int64, error) {
	if a.made {
		if _, err := a.Store.CreateTask(ctx, t, p); err != nil {
			return 0, err
		}
	}
	return 0, a.errNotSent
}

func (a *answerLost) Task(ctx context.Context, owner, id string) (*imagegen.Task, error) {
	if a.lookupErr != nil {
		return nil, a.lookupErr
	}
	return a.Store.Task(ctx, owner, id)
}

// A submit whose store answered an error after making the task keeps
// its key: the retry replays the task the first try made, and the
// owner is charged once. Giving the key up (as for an error before the
// write) would let the retry charge a second time.
func TestSubmitIdempotentAfterAnAnswerLost(t *testing.T) {
	for _, c := range []struct {
		name      string
		made      bool
		lookupErr error
		wantTasks int   // tasks of alice after the retry
		wantBal   int64 // alice's balance after the retry (5 granted, 2 a task)
	}{
		{name: "made", made: true, wantTasks: 1, wantBal: 3},
		{name: "not made", made: false, wantTasks: 1, wantBal: 3},
		{name: "unknown", made: true, lookupErr: errors.New("store unreachable"), wantTasks: 1, wantBal: 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			lost := &answerLost{made: c.made, lookupErr: c.lookupErr, errNotSent: errors.New("not confirmed by enough replicas")}
			f := newFixture(t, imagegentest.NewModel(2), func(cfg *imagegen.Config) { lost.Store = cfg.Store; cfg.Store = lost })
			f.funded(t, "alice", 5)
			once := imagegen.Idempotency{Key: "order-9", Fingerprint: "body-a"}
			req := func() (imagegen.Request, error) { return textReq, nil }

			_, _, err := f.svc.SubmitIdempotent(ctx, "alice", once, req)
			is.True(err != nil) // the caller is told of the error
			lost.made, lost.lookupErr, lost.errNotSent = true, nil, nil

			sub, replayed, err := f.svc.SubmitIdempotent(ctx, "alice", once, req)
			switch {
			case c.lookupErr != nil:
				is.True(errors.Is(err, imagegen.ErrIdempotencyKeyInUse)) // refused, not charged again
			case c.made:
				is.NoErr(err)
				is.True(replayed) // the first try's task
				is.Equal(sub.CreditsUsed, int64(2))
			default:
				is.NoErr(err)
				is.True(!replayed) // nothing was made: the retry makes it
			}
			list, err := f.svc.ListTasks(ctx, "alice", "", 10, "")
			is.NoErr(err)
			is.Equal(len(list.Tasks), c.wantTasks)
			if c.made && c.lookupErr == nil {
				is.Equal(list.Tasks[0].ID, sub.TaskID)
			}
			bal, err := f.svc.Balance(ctx, "alice")
			is.NoErr(err)
			is.Equal(bal, c.wantBal)
		})
	}
}

// landsLate is a store whose submit fails with ErrOutcomeUnknown before
// its write lands: the task appears only when the test lands it, after
// the service's lookup would have found nothing.
type landsLate struct {
	imagegen.Store
	asked []*imagegen.Task // what CreateTask was asked, and has not made yet
}

func (l *landsLate) CreateTask(_ context.Context, t *imagegen.Task, _ imagegen.CreateParams) (int64, error) {
	l.asked = append(l.asked, t)
	return 0, fmt.Errorf("batch cut while it may still commit: %w", imagegen.ErrOutcomeUnknown)
}

// lateFixture is newFixture whose store's submits land late (landsLate),
// with alice funded with 5 credits.
func lateFixture(t *testing.T) (fixture, *landsLate) {
	t.Helper()
	late := &landsLate{}
	f := newFixture(t, imagegentest.NewModel(2), func(cfg *imagegen.Config) { late.Store = cfg.Store; cfg.Store = late })
	f.funded(t, "alice", 5)
	return f, late
}

// land makes the tasks asked of it, as a transaction committing late.
func (l *landsLate) land(t *testing.T) {
	t.Helper()
	for _, task := range l.asked {
		if _, err := l.Store.CreateTask(ctx, task, imagegen.CreateParams{}); err != nil {
			t.Fatal(err)
		}
	}
	l.asked = nil
}

// A store error wrapping ErrOutcomeUnknown keeps the key in flight
// without looking for the task: a lookup would find nothing yet, give
// the key up, and the retry would charge again once the first write
// landed.
func TestSubmitIdempotentOfUnknownOutcomeKeepsTheKey(t *testing.T) {
	is := is.New(t)
	f, late := lateFixture(t)
	once := imagegen.Idempotency{Key: "order-7", Fingerprint: "body-a"}
	req := func() (imagegen.Request, error) { return textReq, nil }

	_, _, err := f.svc.SubmitIdempotent(ctx, "alice", once, req)
	is.True(errors.Is(err, imagegen.ErrOutcomeUnknown)) // the caller is told
	late.land(t)

	_, _, err = f.svc.SubmitIdempotent(ctx, "alice", once, req)
	is.True(errors.Is(err, imagegen.ErrIdempotencyKeyInUse)) // refused, not charged again
	is.Equal(len(late.asked), 0)
	bal, err := f.svc.Balance(ctx, "alice")
	is.NoErr(err)
	is.Equal(bal, int64(3)) // charged once
}
