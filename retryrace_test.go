package imagegen_test

import (
	"context"
	"errors"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
)

// outrunRead is a store that, the first time an armed TaskByID has read
// a task, lets others act on it before the read is returned: what
// another operator, a worker and the task's owner may do between an
// operator's check and its requeue.
type outrunRead struct {
	imagegen.Store
	between func(ctx context.Context, id string)
}

func (s *outrunRead) TaskByID(ctx context.Context, id string) (*imagegen.Task, error) {
	t, err := s.Store.TaskByID(ctx, id)
	if between := s.between; between != nil && err == nil {
		s.between = nil
		between(ctx, id)
	}
	return t, err
}

// An operator's retry with a recharge reads the task refunded, so its
// own check lets the recharge through; before its requeue another
// operator recharges the task, a worker claims it and its owner cancels
// it, keeping that started charge. The store's requeue refuses the first
// operator's recharge: the task never holds two charges unrefunded.
func TestRetryRechargeOutrunByAKeptChargeIsRefused(t *testing.T) {
	is := is.New(t)
	store := &outrunRead{}
	f := newFixture(t, imagegentest.NewModel(1), func(c *imagegen.Config) {
		store.Store = c.Store
		c.Store = store
	})
	id := f.submitFunded(t, "u").TaskID
	is.NoErr(f.svc.Cancel(ctx, "u", id)) // pending: refunded
	_, err := f.svc.Grant(ctx, "u", 2, "credits for retries")
	is.NoErr(err)
	is.Equal(f.balance(t, "u"), int64(3))

	store.between = func(ctx context.Context, id string) {
		is.NoErr(store.Store.RequeueTask(ctx, id, true)) // the other operator's recharge
		claimed, err := store.Store.ClaimTask(ctx, lease)
		is.NoErr(err)
		is.Equal(claimed.ID, id)
		refund, err := store.Store.CancelTask(ctx, "u", id, imagegen.CancelParams{KeepStartedCharge: true})
		is.NoErr(err)
		is.Equal(refund, int64(0)) // the recharge kept
	}
	err = f.svc.Inspector().Retry(ctx, id, true, "the provider's outage is over")
	is.True(errors.Is(err, imagegen.ErrDuplicateEntry)) // would charge it twice
	is.Equal(f.balance(t, "u"), int64(2))               // the other operator's recharge only
	task := f.task(t, "u", id)
	is.Equal(task.Status, imagegen.StatusFailed)
	is.Equal(task.ErrorCode, imagegen.CodeCancelled)
	is.True(!task.Refunded)
}
