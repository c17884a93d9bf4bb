// Package dialwatch remembers the last failed connection attempt of a
// go-redis client. go-redis keeps dialing and retrying until a command's
// context ends, so a Redis that refuses connections shows as "context
// deadline exceeded" alone; Explain adds the refused dial to such an
// error, so a readiness probe or a log can say what really happened.
package dialwatch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Watch is a go-redis hook that records failed dials. It is safe for
// concurrent use.
type Watch struct {
	mu   sync.Mutex
	last error
	at   time.Time
}

// Attach adds a Watch to rdb's hooks and returns it.
func Attach(rdb goredis.UniversalClient) *Watch {
	w := &Watch{}
	rdb.AddHook(w)
	return w
}

// DialHook records the outcome of each dial.
func (w *Watch) DialHook(next goredis.DialHook) goredis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		w.mu.Lock()
		w.last, w.at = err, time.Now()
		w.mu.Unlock()
		return conn, err
	}
}

// ProcessHook passes commands through.
func (w *Watch) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook { return next }

// ProcessPipelineHook passes pipelines through.
func (w *Watch) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return next
}

// Explain returns err, and when it is a context's end, the last dial
// since since too, if that failed (errors.Is sees both).
func (w *Watch) Explain(err error, since time.Time) error {
	if err == nil || !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		return err
	}
	w.mu.Lock()
	last, at := w.last, w.at
	w.mu.Unlock()
	if last == nil || at.Before(since) {
		return err
	}
	return fmt.Errorf("%w; the last connection attempt failed: %w", err, last)
}
