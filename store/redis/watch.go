package redis

import (
	"context"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen/internal/retry"
	"github.com/imagegen/imagegen/store/internal/taskwatch"
)

// WatchTask returns a channel closed when task id finishes, in this or
// any other process: the scripts that finish a task publish its id on
// its shard's channel ("<tag>:finished"; on a sharded store with
// SPUBLISH, so that only the shard's nodes carry it), and one
// subscription per shard and process fans it out. A subscription exists
// only while someone is watching a task of its shard, and for
// watchLinger after the last watcher stops (so that workers, which
// watch each task they run, do not subscribe anew for every task). When
// a subscription's connection breaks, go-redis subscribes again on a
// new one; what was announced in between is lost, so every watcher is
// then woken, spuriously (Store.WatchTask allows it: callers read the
// task again). So is every watcher when a Cluster's node drops the
// subscription because the shard's slot moved away from it (a
// resharding), and the subscription is made anew on the slot's master.
func (s *Store) WatchTask(ctx context.Context, id string) (<-chan struct{}, func(), error) {
	return s.watch.watch(ctx, s.byID(id).finished(), id)
}

// watcher shares one Redis subscription per channel among the
// goroutines waiting for tasks to finish.
type watcher struct {
	rdb     goredis.UniversalClient
	sharded bool // SSUBSCRIBE (a shard's channel) instead of SUBSCRIBE

	mu   sync.Mutex
	subs taskwatch.Set
	chs  map[string]*subscription // by channel
}

// subscription is one channel's: its watch count and its PubSub.
type subscription struct {
	n     int             // watches open
	ps    *goredis.PubSub // nil when n == 0 and the linger ran out
	ready chan struct{}   // closed once ps is subscribed
	err   error           // why subscribing failed, set before ready closes
	idle  *time.Timer     // closes ps watchLinger after n fell to 0
}

// watchLinger is how long a subscription outlives its last watcher.
const watchLinger = 2 * time.Second

func (w *watcher) watch(ctx context.Context, channel, id string) (<-chan struct{}, func(), error) {
	w.mu.Lock()
	if w.chs == nil {
		w.chs = map[string]*subscription{}
	}
	sub := w.chs[channel]
	if sub == nil {
		sub = &subscription{}
		w.chs[channel] = sub
	}
	ch := w.subs.Add(id)
	sub.n++
	if sub.idle != nil {
		sub.idle.Stop()
		sub.idle = nil
	}
	if sub.ps == nil {
		w.start(channel, sub)
	}
	ready := sub.ready
	w.mu.Unlock()

	var once sync.Once
	stop := func() { once.Do(func() { w.unwatch(sub, id, ch) }) }
	select {
	case <-ready:
	case <-ctx.Done():
		stop()
		return nil, nil, ctx.Err()
	}
	w.mu.Lock()
	err := sub.err
	w.mu.Unlock()
	if err != nil {
		stop()
		return nil, nil, wrapErr("watch task", err)
	}
	return ch, stop, nil
}

// start subscribes sub to channel; w.mu is held. Watchers wait on
// sub.ready, so no finish published after WatchTask returns can be
// missed.
func (w *watcher) start(channel string, sub *subscription) {
	ps := w.pubSub()
	sub.ps, sub.ready, sub.err = ps, make(chan struct{}), nil
	go w.run(channel, sub, ps, sub.ready)
}

// pubSub is a new PubSub of no channel yet: it connects at its first
// subscription, on a Cluster to the master of the channel's slot.
func (w *watcher) pubSub() *goredis.PubSub {
	if w.sharded {
		return w.rdb.SSubscribe(context.Background())
	}
	return w.rdb.Subscribe(context.Background())
}

// subscribeTries bounds the subscriptions a start makes while a
// Cluster's node answers that the slot is elsewhere (MOVED): the
// client's map of the slots is reloaded between them.
const subscribeTries = 8

// run subscribes ps to channel, closes ready, and wakes watchers as
// announcements come, until ps is closed.
func (w *watcher) run(channel string, sub *subscription, ps *goredis.PubSub, ready chan struct{}) {
	pause := retry.Doubling{Min: 20 * time.Millisecond, Max: time.Second}
	err := w.subscribe(ps, channel)
	// A Cluster client that has not yet heard that the slot moved (a
	// resharding, a failover) subscribes on the node that served it,
	// which answers MOVED: the slot map is reloaded (in the background:
	// hence the pause) and a new PubSub tries again.
	for try := 1; movedErr(err) && try < subscribeTries; try++ {
		w.reloadSlots()
		time.Sleep(pause.Next())
		_ = ps.Close()
		next := w.pubSub()
		w.mu.Lock()
		mine := sub.ps == ps
		if mine {
			sub.ps = next
		}
		w.mu.Unlock()
		if !mine { // closed meanwhile: nobody watches
			_ = next.Close()
			break
		}
		ps = next
		err = w.subscribe(ps, channel)
	}
	w.mu.Lock()
	if sub.ps == ps {
		sub.err = err
	}
	w.mu.Unlock()
	close(ready)
	if err != nil {
		return
	}
	// Ends when ps is closed. A confirmation after the first is a
	// subscription made again: go-redis does that on a new connection
	// once one breaks (a failover, a node restarted), and what was
	// announced in between reached no one, so every watcher is woken
	// (spuriously: it reads its task again). An unsubscription is the
	// server's (the store never unsubscribes, it closes ps): a Cluster's
	// node that gave the channel's slot away (a resharding, a master
	// demoted) drops its subscribers to the slot's channels on a
	// connection that stays open, and go-redis does not subscribe again.
	// Every watcher is woken, and the subscription is made anew, on the
	// slot's master now, while anyone watches.
	for msg := range ps.ChannelWithSubscriptions() {
		w.mu.Lock()
		switch msg := msg.(type) {
		case *goredis.Message:
			w.subs.Wake(msg.Payload)
		case *goredis.Subscription:
			w.subs.WakeAll()
			if (msg.Kind == "unsubscribe" || msg.Kind == "sunsubscribe") && sub.ps == ps {
				_ = ps.Close()
				w.reloadSlots()
				if sub.n > 0 {
					w.start(channel, sub)
				} else { // lingering: let it go
					if sub.idle != nil {
						sub.idle.Stop()
					}
					sub.ps, sub.idle = nil, nil
				}
			}
		}
		w.mu.Unlock()
	}
}

// subscribe subscribes ps to channel and reads the confirmation.
func (w *watcher) subscribe(ps *goredis.PubSub, channel string) error {
	var err error
	if w.sharded {
		err = ps.SSubscribe(context.Background(), channel)
	} else {
		err = ps.Subscribe(context.Background(), channel)
	}
	if err == nil {
		_, err = ps.Receive(context.Background()) // the confirmation
	}
	return err
}

// reloadSlots has a Cluster client reload its map of the slots (in the
// background).
func (w *watcher) reloadSlots() {
	if cc, ok := w.rdb.(*goredis.ClusterClient); ok {
		cc.ReloadState(context.Background())
	}
}

func (w *watcher) unwatch(sub *subscription, id string, ch chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.subs.Remove(id, ch)
	sub.n--
	if sub.n > 0 || sub.ps == nil {
		return
	}
	if sub.err != nil { // a failed subscription is not kept
		_ = sub.ps.Close()
		sub.ps = nil
		return
	}
	// The timer closes whatever sub.ps is then: a subscription made
	// again (run) replaces it.
	var idle *time.Timer
	idle = time.AfterFunc(watchLinger, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if sub.n == 0 && sub.idle == idle && sub.ps != nil {
			_ = sub.ps.Close()
			sub.ps, sub.idle = nil, nil
		}
	})
	sub.idle = idle
}
