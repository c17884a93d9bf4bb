package redis

import (
	"context"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

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
// task again).
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
	var ps *goredis.PubSub
	if w.sharded {
		ps = w.rdb.SSubscribe(context.Background())
	} else {
		ps = w.rdb.Subscribe(context.Background())
	}
	sub.ps, sub.ready, sub.err = ps, make(chan struct{}), nil
	ready := sub.ready
	go func() {
		var err error
		if w.sharded {
			err = ps.SSubscribe(context.Background(), channel)
		} else {
			err = ps.Subscribe(context.Background(), channel)
		}
		if err == nil {
			_, err = ps.Receive(context.Background()) // the confirmation
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
		// subscription made again: go-redis does that on a new
		// connection once one breaks (a failover, a node restarted), and
		// what was announced in between reached no one, so every watcher
		// is woken (spuriously: it reads its task again).
		for msg := range ps.ChannelWithSubscriptions() {
			w.mu.Lock()
			switch msg := msg.(type) {
			case *goredis.Message:
				w.subs.Wake(msg.Payload)
			case *goredis.Subscription:
				w.subs.WakeAll()
			}
			w.mu.Unlock()
		}
	}()
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
	ps := sub.ps
	sub.idle = time.AfterFunc(watchLinger, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if sub.n == 0 && sub.ps == ps {
			_ = ps.Close()
			sub.ps, sub.idle = nil, nil
		}
	})
}
