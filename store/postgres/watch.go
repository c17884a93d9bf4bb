package postgres

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/imagegen/imagegen/internal/retry"
	"github.com/imagegen/imagegen/store/internal/taskwatch"
)

// WatchTask returns a channel closed when task id finishes, in this or
// any other process (NOTIFY on the "finished" channel), or spuriously
// while the listening connection is down (the polling fallback).
func (s *Store) WatchTask(ctx context.Context, id string) (<-chan struct{}, func(), error) {
	return s.listen.watch(ctx, id)
}

// WorkReady returns a channel that receives a value whenever tasks may
// have become ready in any process on this schema (a submit, a retry,
// recovered leases), and while the listening connection is down, once a
// second. Give it to imagegen.Config.WorkReady so that idle workers start
// at once instead of at their next poll. Each call returns a new channel
// (buffered, values coalesced); it stays registered until Close.
func (s *Store) WorkReady() <-chan struct{} { return s.listen.workReady() }

// pollFallback is how often watchers and idle workers are woken while
// the listening connection is down.
const pollFallback = time.Second

// listener owns the store's dedicated LISTEN connection. It is started
// by the first watch or WorkReady call and runs until close.
type listener struct {
	connConfig       *pgx.ConnConfig // of the listening connection
	finished, queued string

	mu      sync.Mutex
	started bool
	ready   chan struct{} // closed after the first connection attempt
	subs    taskwatch.Set
	work    []chan struct{}
	stop    context.CancelFunc
	done    chan struct{}
}

func newListener(connConfig *pgx.ConnConfig, finished, queued string) *listener {
	return &listener{connConfig: connConfig, finished: finished, queued: queued,
		ready: make(chan struct{})}
}

// start runs the listening loop once; l.mu is held.
func (l *listener) start() {
	if l.started {
		return
	}
	l.started = true
	ctx, cancel := context.WithCancel(context.Background())
	l.stop, l.done = cancel, make(chan struct{})
	go l.run(ctx)
}

func (l *listener) close() {
	l.mu.Lock()
	stop, done := l.stop, l.done
	l.started = true // never start after close
	l.stop = nil
	l.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
}

func (l *listener) watch(ctx context.Context, id string) (<-chan struct{}, func(), error) {
	l.mu.Lock()
	ch := l.subs.Add(id)
	l.start()
	ready := l.ready
	l.mu.Unlock()
	stop := func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.subs.Remove(id, ch)
	}
	// Wait until LISTEN runs (or the first try failed: then the fallback
	// wakes the watcher), so no finish after this call is missed.
	select {
	case <-ready:
	case <-ctx.Done():
		stop()
		return nil, nil, ctx.Err()
	}
	return ch, stop, nil
}

func (l *listener) workReady() <-chan struct{} {
	ch := make(chan struct{}, 1)
	l.mu.Lock()
	l.work = append(l.work, ch)
	l.start()
	l.mu.Unlock()
	return ch
}

// wakeTask closes the watchers of id.
func (l *listener) wakeTask(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.subs.Wake(id)
}

// wakeAll closes every watcher and signals every idle worker: something
// may have been missed.
func (l *listener) wakeAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.subs.WakeAll()
	l.signalWorkLocked()
}

func (l *listener) signalWork() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.signalWorkLocked()
}

func (l *listener) signalWorkLocked() {
	for _, ch := range l.work {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// run keeps a connection listening, reconnecting with a growing pause
// (at most pollFallback) while it cannot, and wakes everyone once a
// pollFallback meanwhile.
func (l *listener) run(ctx context.Context) {
	defer close(l.done)
	first := true
	markReady := func() {
		if first {
			first = false
			close(l.ready)
		}
	}
	defer markReady()
	pause := retry.Doubling{Min: 50 * time.Millisecond, Max: pollFallback}
	for ctx.Err() == nil {
		l.listenOnce(ctx, func() {
			if first {
				l.signalWork() // workers that started before it listened look once
			} else {
				l.wakeAll() // anything may have finished while nobody listened
			}
			markReady()
			pause.Reset()
		})
		if ctx.Err() != nil {
			return
		}
		markReady()
		l.wakeAll()
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause.Next()):
		}
	}
}

// listenOnce connects, LISTENs and dispatches notifications until the
// connection fails or ctx ends. listening is called once LISTEN runs.
// Why it ended does not matter: the caller reconnects either way.
func (l *listener) listenOnce(ctx context.Context, listening func()) error {
	connectCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	conn, err := pgx.ConnectConfig(connectCtx, l.connConfig.Copy())
	cancel()
	if err != nil {
		return err
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = conn.Close(closeCtx)
		cancel()
	}()
	for _, ch := range []string{l.finished, l.queued} {
		if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
			return err
		}
	}
	listening()
	for {
		// Wake everyone now and then if nothing arrives, so that a
		// connection that died silently is found out.
		waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		n, err := conn.WaitForNotification(waitCtx)
		timedOut := waitCtx.Err() != nil && ctx.Err() == nil
		cancel()
		if timedOut {
			if err := conn.Ping(ctx); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		switch n.Channel {
		case l.finished:
			l.wakeTask(n.Payload)
		case l.queued:
			l.signalWork()
		}
	}
}

// notifier sends notifications on one channel after the changes they
// announce have committed, at most one statement in flight: payloads
// poked meanwhile go together in the next one. (A notifying transaction
// takes a lock that serialises commits database-wide, so announcing
// every submit or finish in its own transaction would cap them at one
// disk flush at a time.)
type notifier struct {
	send func(payloads []string)

	mu      sync.Mutex
	running bool
	pending map[string]struct{}
}

// poke queues payload (once, however often it is poked before it is
// sent) and makes sure a sender runs.
func (n *notifier) poke(payload string) {
	n.mu.Lock()
	if n.pending == nil {
		n.pending = map[string]struct{}{}
	}
	n.pending[payload] = struct{}{}
	if n.running {
		n.mu.Unlock()
		return
	}
	n.running = true
	n.mu.Unlock()
	go func() {
		for {
			n.mu.Lock()
			if len(n.pending) == 0 {
				n.running = false
				n.mu.Unlock()
				return
			}
			payloads := make([]string, 0, len(n.pending))
			for p := range n.pending {
				payloads = append(payloads, p)
			}
			clear(n.pending)
			n.mu.Unlock()
			n.send(payloads)
		}
	}()
}

// notifyAll sends payloads on channel in one statement (best effort: a
// lost wake-up is covered by polling).
func (s *Store) notifyAll(channel string, payloads []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := s.pool.Exec(ctx, `SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p`, channel, payloads)
	s.resets.Note(err)
}
