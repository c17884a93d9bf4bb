package replicate

import (
	"context"
	"errors"
	"fmt"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
)

// await polls p (urls.get) every PollInterval, on the client's clock,
// until it ends. When it stops following a running prediction (ctx
// ended, the next poll would pass ctx's deadline, a read failed), it
// cancels the prediction (urls.cancel) and returns why it stopped.
func (m *Model) await(ctx context.Context, p *prediction) (*prediction, error) {
	for p.running() {
		if err := provider.Wait(ctx, m.client.Policy.Clock, m.cfg.PollInterval); err != nil {
			return nil, m.abandon(ctx, p, waitError(p, err))
		}
		next, err := m.get(ctx, p)
		if err != nil {
			return nil, m.abandon(ctx, p, err)
		}
		p = next
	}
	return p, nil
}

// waitError is why polling stopped early: ctx ended, or its deadline
// comes before the next poll. Both are retryable.
func waitError(p *prediction, err error) error {
	cause := fmt.Errorf("prediction %s still %s: %w", p.ID, p.Status, err)
	if errors.Is(err, provider.ErrPastDeadline) {
		return &imagegen.ModelError{Provider: Provider, Retryable: true, Message: provider.MsgTimeout, Err: cause}
	}
	return provider.NetworkError(Provider, cause)
}

// abandon cancels a prediction nobody will wait for, and returns err
// (a *imagegen.ModelError) with the outcome of the cancel in its cause.
func (m *Model) abandon(ctx context.Context, p *prediction, err error) error {
	var me *imagegen.ModelError
	if !errors.As(err, &me) {
		me = &imagegen.ModelError{Provider: Provider, Retryable: true, Message: provider.MsgUnavailable, Err: err}
	}
	out := *me
	if cerr := m.cancel(ctx, p); cerr != nil {
		out.Err = fmt.Errorf("%w (cancelling prediction %s failed: %v)", me.Err, p.ID, cerr)
	} else {
		out.Err = fmt.Errorf("%w (prediction %s cancelled)", me.Err, p.ID)
	}
	return &out
}
