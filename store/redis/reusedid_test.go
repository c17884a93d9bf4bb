package redis_test

import (
	"context"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/testenv/redistest"
	redisstore "github.com/imagegen/imagegen/store/redis"
)

// A submit sent once that reuses the id of a task made before, with the
// same owner, request and request id (a host app that names its tasks
// itself, say by an order number, and submits the same order again once
// its first task has run), was answered as made: the check for a run
// sent again after a lost reply took it for its own. The caller was told
// of a new pending task, charged nothing, while the task was the old one
// (finished, here). It is refused as the id taken again, as the memory
// and PostgreSQL stores refuse it; only a run sent again answers it as
// made (TestCreateSentAgainAfterLostReply).
func TestCreateOfAReusedIDIsRefused(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	s := newIsolated(t, redistest.NewClient(t, redistest.Options(t)), redisstore.Config{Retention: retention})
	first := finishedOrder(t, s)
	again := *first
	again.Status = ""
	_, err := s.CreateTask(ctx, &again, imagegen.CreateParams{})
	is.True(err != nil) // the id is taken: no new task
	firstKept(t, s, first.ID)
}

// finishedOrder grants owner "u" 10 credits on s, submits a task of 3
// whose id a host app chose (an order's), and runs it to success.
func finishedOrder(t *testing.T, s *redisstore.Store) *imagegen.Task {
	t.Helper()
	is := is.New(t)
	ctx := context.Background()
	_, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "u", Kind: imagegen.LedgerGrant, Amount: 10, Ref: "g"})
	is.NoErr(err)
	first := &imagegen.Task{ID: imagegen.NewOwnedID("u") + "-order-17", Owner: "u", Cost: 3, Model: "m", RequestID: "r1",
		Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p"}}
	_, err = s.CreateTask(ctx, first, imagegen.CreateParams{})
	is.NoErr(err)
	c, err := s.ClaimTask(ctx, time.Minute)
	is.NoErr(err)
	is.NoErr(s.CompleteTask(ctx, c.ID, c.Attempt, nil, nil))
	return first
}

// firstKept checks that the task id made by finishedOrder is still that
// task, finished, and that its owner was charged for it alone.
func firstKept(t *testing.T, s *redisstore.Store, id string) {
	t.Helper()
	is := is.New(t)
	ctx := context.Background()
	got, err := s.Task(ctx, "u", id)
	is.NoErr(err)
	is.Equal(got.Status, imagegen.StatusSuccess) // the first task, as it was
	b, err := s.Balance(ctx, "u")
	is.NoErr(err)
	is.Equal(b, int64(7))
}

// The same submit whose reply was lost (go-redis sent the batch again)
// was answered as made too: the run sent again took a task of the same
// id, owner, request and request id for the one its first run had
// made, though its first run had refused the id as taken. The caller
// was told of a new pending task, charged nothing, while the task was
// the old one. A run sent again now answers as made only a task that
// holds its batch's token, which no other batch's task holds.
func TestCreateOfAReusedIDSentAgainIsRefused(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	s, p := behindDropper(t, redisstore.Config{Retention: retention})
	first := finishedOrder(t, s)
	again := *first
	again.Status = ""
	p.Arm(first.ID)
	_, err := s.CreateTask(ctx, &again, imagegen.CreateParams{})
	is.Equal(p.Dropped(), 1) // the reply was lost, and the batch sent again
	is.True(err != nil)      // the id is taken: no new task
	firstKept(t, s, first.ID)
}
