package imagegen_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
)

// lostClaimReply is a store whose first claim is answered only once the
// test lets it go, and whose answer is lost when the caller's context
// has ended by then: the claim itself is made (as on Redis or
// PostgreSQL, where a call cut short by its context may have run on the
// server all the same).
type lostClaimReply struct {
	imagegen.Store
	once    sync.Once
	started chan struct{}
	proceed chan struct{}
}

func (s *lostClaimReply) ClaimTasks(ctx context.Context, p imagegen.ClaimParams) ([]*imagegen.Task, error) {
	first := false
	s.once.Do(func() { first = true })
	if !first {
		return s.Store.ClaimTasks(ctx, p)
	}
	close(s.started)
	<-s.proceed
	tasks, err := s.Store.ClaimTasks(context.WithoutCancel(ctx), p)
	if err == nil && ctx.Err() != nil {
		return nil, fmt.Errorf("claim: reply lost: %w", ctx.Err())
	}
	return tasks, err
}

// A shutdown that comes while a claim is under way must not leave the
// tasks that claim took held by no one until their leases run out (each
// then with an attempt used up: failed and refunded on its last one):
// they are given back at once, with no attempt counted.
func TestShutdownDuringClaimGivesTheClaimedTasksBack(t *testing.T) {
	is := is.New(t)
	store := &lostClaimReply{started: make(chan struct{}), proceed: make(chan struct{})}
	f := newFixture(t, imagegentest.NewModel(1), func(c *imagegen.Config) {
		store.Store = c.Store
		c.Store = store
	})
	sub := f.submitFunded(t, "u")
	cancel, stopped := f.runInBackground()
	<-store.started
	cancel() // the shutdown, while the claim is in flight
	close(store.proceed)
	is.NoErr(<-stopped)

	task := f.task(t, "u", sub.TaskID)
	is.Equal(task.Status, imagegen.StatusPending) // given back, not held until its lease ends
	is.Equal(task.CountedAttempts(), 0)           // the claim cut short by the shutdown uses up no attempt
	is.Equal(len(f.model.Calls()), 0)             // nothing started after the shutdown
}
