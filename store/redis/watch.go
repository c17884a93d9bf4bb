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
// one channel per store, and one subscription per process fans it out.
// The subscription exists only while someone is watching, and for
// watchLinger after the last watcher stops (so that workers, which
// watch each task they run, do not subscribe anew for every task).
func (s *Store) WatchTask(ctx context.Context, id string) (<-chan struct{}, func(), error) {
	return s.watch.watch(ctx, id)
}

// watcher shares one Redis subscription among the goroutines waiting for
// tasks to finish.
type watcher struct {
	rdb     goredis.UniversalClient
	channel string

	mu    sync.Mutex
	subs  taskwatch.Set
	n     int             // watches open
	ps    *goredis.PubSub // nil when n == 0 and the linger ran out
	ready chan struct{}   // closed once ps is subscribed
	err   error           // why subscribing failed, set before ready closes
	idle  *time.Timer     // closes ps watchLinger after n fell to 0
}

// watchLinger is how long a subscription outlives its last watcher.
const watchLinger = 2 * time.Second

func (w *watcher) watch(ctx context.Context, id string) (<-chan struct{}, func(), error) {
	w.mu.Lock()
	ch := w.subs.Add(id)
	w.n++
	if w.idle != nil {
		w.idle.Stop()
		w.idle = nil
	}
	if w.ps == nil {
		w.start()
	}
	ready := w.ready
	w.mu.Unlock()

	var once sync.Once
	stop := func() { once.Do(func() { w.unwatch(id, ch) }) }
	select {
	case <-ready:
	case <-ctx.Done():
		stop()
		return nil, nil, ctx.Err()
	}
	w.mu.Lock()
	err := w.err
	w.mu.Unlock()
	if err != nil {
		stop()
		return nil, nil, wrapErr("watch task", err)
	}
	return ch, stop, nil
}

// start subscribes; w.mu is held. Watchers wait on w.ready, so no finish
// published after WatchTask returns can be missed.
func (w *watcher) start() {
	ps := w.rdb.Subscribe(context.Background())
	w.ps, w.ready, w.err = ps, make(chan struct{}), nil
	ready := w.ready
	go func() {
		err := ps.Subscribe(context.Background(), w.channel)
		if err == nil {
			_, err = ps.Receive(context.Background()) // the confirmation
		}
		w.mu.Lock()
		if w.ps == ps {
			w.err = err
		}
		w.mu.Unlock()
		close(ready)
		if err != nil {
			return
		}
		for msg := range ps.Channel() { // ends when ps is closed
			w.mu.Lock()
			w.subs.Wake(msg.Payload)
			w.mu.Unlock()
		}
	}()
}

func (w *watcher) unwatch(id string, ch chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.subs.Remove(id, ch)
	w.n--
	if w.n > 0 || w.ps == nil {
		return
	}
	if w.err != nil { // a failed subscription is not kept
		_ = w.ps.Close()
		w.ps = nil
		return
	}
	ps := w.ps
	w.idle = time.AfterFunc(watchLinger, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.n == 0 && w.ps == ps {
			_ = ps.Close()
			w.ps, w.idle = nil, nil
		}
	})
}
