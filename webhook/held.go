package webhook

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/imagegen/imagegen"
)

// heldPerShare is how many deliveries a destination or an owner may have
// held in the dispatcher, waiting for their turn, per delivery of its
// share in flight; it is also how many of its given-back deliveries come
// back together.
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

// backlog is when a key's given-back deliveries come again: at, with n of
// them already due then.
type backlog struct {
	at time.Time
	n  int
}

// heldCap is how many deliveries key (a "d:" destination or "o:" owner)
// may have held, and come back together.
func (d *Dispatcher) heldCap(key string) int {
	if strings.HasPrefix(key, "d:") {
		return heldPerShare * d.cfg.PerDestination
	}
	return heldPerShare * d.cfg.PerOwner
}

// holdOrGiveBack holds x until its destination and owner have room, or,
// when they already have as many held as they may, gives it back to the
// store (see Run).
func (d *Dispatcher) holdOrGiveBack(ctx context.Context, x heldDelivery) {
	d.mu.Lock()
	if d.held.by[x.dest] < d.heldCap(x.dest) && d.held.by[x.owner] < d.heldCap(x.owner) {
		d.held.add(x)
		d.mu.Unlock()
		return
	}
	now := d.cfg.Clock.Now()
	delay := d.comeBackAt(now, x.dest, x.owner).Sub(now)
	d.mu.Unlock()
	d.cfg.Logger.DebugContext(ctx, "webhook postponed: its destination or owner has its share of deliveries in flight",
		"task_id", x.del.TaskID, "delay", delay.String())
	ctx, cancel := storeContext(ctx)
	defer cancel()
	d.postpone(ctx, x.del, delay)
}

// comeBackAt is when a delivery of keys given back now is due again:
// PollInterval from now, or AttemptTimeout when nothing of a key has
// moved for a PollInterval (a hanging receiver), and after the key's
// earlier ones once heldCap of those come back together. Only keys with
// deliveries in flight keep a backlog (give drops it with their last).
// d.mu is held.
func (d *Dispatcher) comeBackAt(now time.Time, keys ...string) time.Time {
	wait := d.cfg.PollInterval
	for _, k := range keys {
		if d.flying[k] > 0 && now.Sub(d.moved[k]) >= d.cfg.PollInterval {
			wait = d.cfg.AttemptTimeout
		}
	}
	at := now.Add(wait)
	for _, k := range keys {
		if b := d.back[k]; b.at.After(at) {
			at = b.at
		}
	}
	for _, k := range keys {
		if d.flying[k] == 0 {
			// Nothing of k is in flight, so give will never clear its
			// entry: the other key, whose share is in flight, paces
			// these deliveries. (Keeping it cost an entry for every owner
			// or receiver the dispatcher ever gave back, for good.)
			continue
		}
		b := d.back[k]
		if !b.at.Equal(at) {
			b = backlog{at: at}
		}
		if b.n++; b.n >= d.heldCap(k) {
			b = backlog{at: at.Add(wait)} // that batch is full: the next come a wait later
		}
		d.back[k] = b
	}
	return at
}

// startHeld starts up to n held deliveries whose destination and owner
// now have room, oldest first. A held delivery with less than two
// attempts' time left of its lease is given back instead (its result
// would be written after another dispatcher could claim it), and one
// whose lease has ended is dropped: the store offers it again. It
// returns how many started.
func (d *Dispatcher) startHeld(ctx context.Context, n int, wg *sync.WaitGroup, done func()) int {
	started := 0
	var late []heldDelivery
	now := d.cfg.Clock.Now()
	d.mu.Lock()
	for i := 0; i < len(d.held.list) && started < n; {
		x := d.held.list[i]
		leaseEnd := x.claimedAt.Add(d.cfg.Lease)
		switch {
		case !now.Before(leaseEnd):
			d.held.remove(i)
		case now.Add(2 * d.cfg.AttemptTimeout).After(leaseEnd):
			late = append(late, d.held.remove(i))
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
	d.giveBack(ctx, late)
	return started
}

// giveBackHeld gives every held delivery back to the store, due at once,
// when Run ends.
func (d *Dispatcher) giveBackHeld(ctx context.Context) {
	d.mu.Lock()
	held := d.held.list
	d.held = heldDeliveries{by: map[string]int{}}
	d.mu.Unlock()
	d.giveBack(ctx, held)
}

// giveBack gives deliveries back to the store, due at once, all within
// one storeTimeout.
func (d *Dispatcher) giveBack(ctx context.Context, held []heldDelivery) {
	if len(held) == 0 {
		return
	}
	ctx, cancel := storeContext(ctx)
	defer cancel()
	for _, x := range held {
		d.postpone(ctx, x.del, 0)
	}
}

// postpone gives del back to the store, due after delay, counting no
// attempt; on failure its lease brings it back when it ends.
func (d *Dispatcher) postpone(ctx context.Context, del imagegen.WebhookDelivery, delay time.Duration) {
	if err := d.store.PostponeWebhook(ctx, del.ID, delay); err != nil {
		d.cfg.Logger.WarnContext(ctx, "webhook: give back a postponed delivery; its lease will bring it back", "task_id", del.TaskID, "err", err)
	}
}
