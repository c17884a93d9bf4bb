// Package groupcommit coalesces concurrent calls into batches (group
// commit): a store sends the calls that arrive while earlier batches are
// in flight together, in one round trip and one commit, so many
// concurrent callers share the cost of one. A lone call goes at once, so
// nothing ever waits for a batch to fill; with MinBehind, a small batch
// waits (briefly) only behind another in flight.
package groupcommit

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/imagegen/imagegen/internal/yield"
)

// Call is one caller's request, and its result once Run has set it.
type Call[Req, Res any] struct {
	Ctx context.Context
	Req Req
	Res Res
	Err error

	done   chan struct{}
	queued time.Time // when Do queued it (MinBehind's HoldMax counts from here)
}

// Batcher runs calls in batches of at most MaxBatch, with at most
// MaxInFlight batches running at once. It is safe for concurrent use;
// the zero value is not: set Run, MaxBatch and MaxInFlight.
type Batcher[Req, Res any] struct {
	// Run executes one batch and sets each call's Res or Err. Its ctx
	// outlives the callers' (bounded by Timeout), so that a batch is
	// never cut short by one caller giving up.
	Run         func(ctx context.Context, batch []*Call[Req, Res])
	MaxBatch    int
	MaxInFlight int
	Timeout     time.Duration // bounds one Run (default DefaultTimeout)
	// Size, when set, is a call's size (its bytes, say): a batch then
	// also stops before its sizes add up to more than MaxSize, though it
	// always takes at least one call.
	Size    func(Req) int
	MaxSize int
	// Gather, when set, lets the callers a batch has just answered
	// queue their next calls before the next batch is taken: the
	// flusher yields (runtime.Gosched) as long as that grows the queue,
	// up to MaxBatch. Without it, callers that call again at once (a
	// closed loop) split into alternating batches: the one call that
	// came while a batch ran goes alone, the rest wait for it and go
	// next (PostgreSQL store, bench module's 32 submitters: batches of
	// 1 and 31 in turn, each waiting for its own disk flush).
	Gather bool
	// MinBehind, when set, keeps a batch of fewer calls than MinBehind
	// from going while another batch is in flight: its calls wait for
	// that batch to end (whose flusher then takes them, with the calls
	// that came meanwhile), for more calls to make MinBehind, or for
	// HoldMax to pass since the first of them was queued, whichever
	// comes first. A server with a fixed cost a run (a Redis script's is
	// larger than a task's share of it) then does fewer, larger runs
	// under moderate concurrency, where MaxInFlight alone sent a run for
	// every two or three calls; a lone call, with nothing in flight,
	// still goes at once. Keep it at most MaxBatch (and what MaxSize
	// lets a batch hold): a batch that can never reach it is always held
	// HoldMax behind another.
	MinBehind int
	// HoldMax bounds how long MinBehind holds a call (default
	// DefaultHoldMax): a batch in flight that takes longer (a connection
	// stalled) does not hold the others up for its whole Timeout.
	HoldMax time.Duration

	mu       sync.Mutex
	queue    []*Call[Req, Res]
	flushers int           // running, holding or lingering
	running  int           // flushers inside Run
	idle     int           // holding or lingering flushers not yet woken
	wake     chan struct{} // one token per flusher woken from lingering
}

// DefaultTimeout bounds one Run when Batcher.Timeout is zero. A call
// taken into a batch just before its caller's deadline may so be done up
// to this long after it.
const DefaultTimeout = 10 * time.Second

// DefaultHoldMax bounds how long MinBehind holds a batch when
// Batcher.HoldMax is zero: several round trips on loopback or a local
// network, short beside a request's own time.
const DefaultHoldMax = time.Millisecond

// linger is how long a flusher that found the queue empty waits for
// more calls before it ends. A flusher's stack grows to the depth of Run
// (a client library's pipeline, say); one started for every batch grew
// it again each time, which cost the Redis store's pipeline (bench) about
// a tenth of its Go CPU in runtime.copystack.
const linger = 100 * time.Millisecond

// Do queues req, waits for its batch to run, and returns its result. A
// call whose ctx ends before its batch is sent is dropped with ctx's
// error (and nothing done for it), at once: it does not wait for the
// batches in flight to end first.
func (b *Batcher[Req, Res]) Do(ctx context.Context, req Req) (Res, error) {
	c := &Call[Req, Res]{Ctx: ctx, Req: req, done: make(chan struct{})}
	if b.MinBehind > 0 {
		c.queued = time.Now()
	}
	b.mu.Lock()
	b.queue = append(b.queue, c)
	start := false
	switch {
	case b.idle > 0: // a lingering flusher takes it
		b.idle--
		b.wake <- struct{}{} // never blocks: fewer tokens than flushers
	case b.flushers < b.MaxInFlight:
		b.flushers++
		start = true
		if b.wake == nil {
			b.wake = make(chan struct{}, b.MaxInFlight)
		}
	}
	b.mu.Unlock()
	if start {
		go b.flush()
	}
	select {
	case <-c.done:
	case <-ctx.Done():
		b.mu.Lock()
		if i := slices.Index(b.queue, c); i >= 0 { // not taken yet: drop it
			b.queue = slices.Delete(b.queue, i, i+1)
			b.mu.Unlock()
			var zero Res
			return zero, ctx.Err()
		}
		b.mu.Unlock()
		<-c.done // taken: its batch is sent, or it is being dropped
	}
	return c.Res, c.Err
}

// flush runs batches until it has run none for linger: the time it
// held a batch (MinBehind) that another flusher then took counts as
// lingering.
func (b *Batcher[Req, Res]) flush() {
	timeout := b.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	var (
		idle     *time.Timer
		idleFrom time.Time // since when it has run no batch (zero: it just ran one)
	)
	for {
		b.mu.Lock()
		n := b.batchLen()
		var wait time.Duration // how long to stay idle before looking again (0: take the batch)
		if n == 0 || n < b.MinBehind && b.running > 0 {
			now := time.Now()
			if idleFrom.IsZero() {
				idleFrom = now
			}
			if n > 0 { // held: until HoldMax after its first call was queued (at most linger a sleep)
				wait = min(b.queue[0].queued.Add(cmp.Or(b.HoldMax, DefaultHoldMax)).Sub(now), linger)
			} else if wait = idleFrom.Add(linger).Sub(now); wait <= 0 { // lingered long enough
				b.flushers--
				b.mu.Unlock()
				return
			}
		}
		if wait > 0 {
			b.idle++
			b.mu.Unlock()
			if idle == nil {
				idle = time.NewTimer(wait)
			} else {
				idle.Reset(wait)
			}
			select {
			case <-b.wake:
				idle.Stop()
				continue
			case <-idle.C:
			}
			b.mu.Lock()
			select {
			case <-b.wake: // woken as the timer fired: take the token
				b.mu.Unlock()
				continue
			default:
			}
			b.idle--
			b.mu.Unlock()
			continue // a batch to take or to hold on, or linger's end
		}
		idleFrom = time.Time{}
		batch := make([]*Call[Req, Res], 0, n)
		for _, c := range b.queue[:n] {
			if err := c.Ctx.Err(); err != nil {
				c.Err = err // gave up before it was sent: nothing done
				close(c.done)
				continue
			}
			batch = append(batch, c)
		}
		b.queue = append(b.queue[:0], b.queue[n:]...)
		if len(batch) > 0 {
			b.running++
		}
		b.mu.Unlock()
		if len(batch) > 0 {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(batch[0].Ctx), timeout)
			b.Run(ctx, batch)
			cancel()
			b.mu.Lock()
			b.running--
			b.mu.Unlock()
			for _, c := range batch {
				close(c.done)
			}
			if b.Gather {
				yield.WhileGrowing(b.queued(), b.MaxBatch, func(int) int { return b.queued() })
			}
		}
	}
}

// queued is how many calls wait.
func (b *Batcher[Req, Res]) queued() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queue)
}

// batchLen is how many queued calls the next batch takes; b.mu is held.
func (b *Batcher[Req, Res]) batchLen() int {
	n := min(len(b.queue), b.MaxBatch)
	if b.Size == nil || n == 0 {
		return n
	}
	size := b.Size(b.queue[0].Req)
	for i := 1; i < n; i++ {
		if size += b.Size(b.queue[i].Req); size > b.MaxSize {
			return i
		}
	}
	return n
}
