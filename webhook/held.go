package webhook

import (
	"context"
	"sync"
	"time"

	"github.com/imagegen/imagegen"
)

// heldPerShare is how many deliveries a destination or an owner may have
// held in the dispatcher, waiting for their turn, per delivery of its
// share in flight.
const heldPerShare = 8

// heldDelivery is a delivery Run claimed while its destination or owner
// had its share in flight.
type heldDelivery struct {
	del         imagegen.WebhookDelivery
	dest, owner string
	claimedAt   time.Time
}

// heldDeliveries is the dispatcher's list of held deliveries, oldest
// first, with their number per destination and owner key.
type heldDeliveries struct {
	list []heldDelivery
	by   map[string]int
}

func (h *heldDeliveries) add(x heldDelivery) {
	h.list = append(h.list, x)
	h.by[x.dest]++
	h.by[x.owner]++
}

// remove takes out list[i].
func (h *heldDeliveries) remove(i int) heldDelivery {
	x := h.list[i]
	h.list = append(h.list[:i], h.list[i+1:]...)
	for _, k := range []string{x.dest, x.owner} {
		if h.by[k]--; h.by[k] <= 0 {
			delete(h.by, k)
		}
	}
	return x
}

// holdOrGiveBack holds x until its destination and owner have room, or,
// when they already have as many held as they may, gives it back to the
// store (see Run).
func (d *Dispatcher) holdOrGiveBack(ctx context.Context, x heldDelivery) {
	d.mu.Lock()
	if d.held.by[x.dest] < heldPerShare*d.cfg.PerDestination && d.held.by[x.owner] < heldPerShare*d.cfg.PerOwner {
		d.held.add(x)
		d.mu.Unlock()
		return
	}
	delay := d.cfg.PollInterval
	now := d.cfg.Clock.Now()
	for _, k := range []string{x.dest, x.owner} {
		if d.flying[k] > 0 && now.Sub(d.moved[k]) >= d.cfg.PollInterval {
			delay = d.cfg.AttemptTimeout // nothing of it moved lately: a hanging receiver
		}
	}
	d.mu.Unlock()
	d.cfg.Logger.DebugContext(ctx, "webhook postponed: its destination or owner has its share of deliveries in flight",
		"task_id", x.del.TaskID, "delay", delay)
	d.postpone(ctx, x.del, delay)
}

// startHeld starts up to n held deliveries whose destination and owner
// now have room, oldest first; a held delivery whose lease would end
// within an attempt is given back instead. It returns how many started.
func (d *Dispatcher) startHeld(ctx context.Context, n int, wg *sync.WaitGroup, done func()) int {
	started := 0
	var expired []heldDelivery
	deadline := d.cfg.Clock.Now().Add(d.cfg.AttemptTimeout - d.cfg.Lease) // claimed before it: too late to start
	d.mu.Lock()
	for i := 0; i < len(d.held.list) && started < n; {
		x := d.held.list[i]
		switch {
		case x.claimedAt.Before(deadline):
			expired = append(expired, d.held.remove(i))
		case d.hasRoom(x.dest, x.owner):
			d.held.remove(i)
			d.takeLocked(x.dest, x.owner)
			d.send1(ctx, x.del, x.dest, x.owner, wg, done)
			started++
		default:
			i++
		}
	}
	d.mu.Unlock()
	for _, x := range expired {
		d.postpone(ctx, x.del, 0)
	}
	return started
}

// giveBackHeld gives every held delivery back to the store, due at once,
// when Run ends.
func (d *Dispatcher) giveBackHeld(ctx context.Context) {
	d.mu.Lock()
	held := d.held.list
	d.held = heldDeliveries{by: map[string]int{}}
	d.mu.Unlock()
	for _, x := range held {
		d.postpone(ctx, x.del, 0)
	}
}

// postpone gives del back to the store, due after delay, counting no
// attempt. It is done even when ctx has ended; on failure the lease
// brings the delivery back when it ends.
func (d *Dispatcher) postpone(ctx context.Context, del imagegen.WebhookDelivery, delay time.Duration) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := d.store.PostponeWebhook(ctx, del.ID, delay); err != nil {
		d.cfg.Logger.WarnContext(ctx, "webhook: give back a postponed delivery; its lease will bring it back", "task_id", del.TaskID, "err", err)
	}
}
