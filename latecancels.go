package imagegen

import (
	"container/heap"
	"context"
	"sync"
	"time"
)

// lateCancels are the lost submits whose tasks CancelLostSubmit keeps
// cancelling, by when each is tried next, and the one goroutine that
// tries them (running while any is left).
type lateCancels struct {
	mu      sync.Mutex
	due     lateCancelHeap
	running bool
	wake    chan struct{} // an earlier try than the one waited for was added
}

// lateCancel is one lost submit's task still to cancel.
type lateCancel struct {
	ctx       context.Context // the logs' values
	owner, id string
	at        time.Time // when it is tried next
	tries     int       // tries made after CancelLostSubmit's own
}

// add queues c, tried lostSubmitFirstWait from now, and starts the
// goroutine if none runs; past maxLateCancels it logs c and leaves it.
func (l *lateCancels) add(s *Service, c lateCancel) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.due) >= maxLateCancels {
		s.log.ErrorContext(c.ctx, "too many lost submits of unknown outcome: their task is not cancelled should it land later", "task_id", c.id)
		return
	}
	s.log.WarnContext(c.ctx, "lost submit of unknown outcome: cancelling its task should it land later", "task_id", c.id)
	c.at = s.cfg.Clock.Now().Add(lostSubmitFirstWait)
	heap.Push(&l.due, c)
	switch {
	case !l.running:
		l.running = true
		go l.run(s)
	case l.due[0].id == c.id:
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
}

// run tries each queued cancel when it is due, one at a time, until none
// is left.
func (l *lateCancels) run(s *Service) {
	for {
		l.mu.Lock()
		if len(l.due) == 0 {
			l.running = false
			l.mu.Unlock()
			return
		}
		if d := l.due[0].at.Sub(s.cfg.Clock.Now()); d > 0 {
			l.mu.Unlock()
			select {
			case <-s.cfg.Clock.After(d):
			case <-l.wake:
			}
			continue
		}
		c := heap.Pop(&l.due).(lateCancel)
		l.mu.Unlock()
		if !s.tryLateCancel(&c) {
			continue
		}
		l.mu.Lock()
		c.at = s.cfg.Clock.Now().Add(lostSubmitFirstWait << c.tries) // each wait twice the one before
		heap.Push(&l.due, c)
		l.mu.Unlock()
	}
}

// lateCancelHeap orders lateCancels by their next try (container/heap).
type lateCancelHeap []lateCancel

func (h lateCancelHeap) Len() int           { return len(h) }
func (h lateCancelHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h lateCancelHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *lateCancelHeap) Push(x any)        { *h = append(*h, x.(lateCancel)) }
func (h *lateCancelHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	old[len(old)-1] = lateCancel{}
	*h = old[:len(old)-1]
	return c
}
