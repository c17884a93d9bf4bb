package webhook

import (
	"sync"
	"time"

	"github.com/imagegen/imagegen"
)

// notSentError is a delivery attempt that failed on our side before
// anything was sent to the receiver: the task or the owner's secret
// could not be read from the store, the body could not be rendered, or
// the request could not be signed. The receiver was never reached, so
// such an attempt does not count towards MaxAttempts (see unsent).
type notSentError struct{ err error }

func (e *notSentError) Error() string { return "not sent: " + e.err.Error() }
func (e *notSentError) Unwrap() error { return e.err }

// notSent wraps err, a failure before the post, as a notSentError.
func notSent(err error) error { return &notSentError{err: err} }

// unsentPruneAt is how many deliveries unsent tracks before it drops
// those it has not seen for a while (another dispatcher may have
// delivered them).
const unsentPruneAt = 4096

// unsent counts, per delivery (its task and event), the attempts in a
// row that failed on our side before anything was sent (notSentError).
// Those do not count towards MaxAttempts, the receiver's budget: a
// store outage or a bug of ours must not use up the attempts of every
// callback due meanwhile. But they are not free either, or a failure
// that never heals (a task the renderer cannot render) would come back
// for ever: the first MaxAttempts of them are given back to the store
// with the backoff (PostponeWebhook, nothing counted), and those after
// count like attempts the receiver failed (RetryWebhook), so that such a
// delivery is given up after at most twice MaxAttempts tries. The count
// is this dispatcher's, in memory: a restart, or another dispatcher
// claiming the delivery, starts it again, each bounded the same way.
type unsent struct {
	mu      sync.Mutex
	by      map[string]unsentCount
	pruneAt int // the size at which by is next pruned: twice what the last prune kept, at least unsentPruneAt
}

type unsentCount struct {
	n    int
	last time.Time
}

// key names a delivery across its claims (its ID changes with each).
func unsentKey(del imagegen.WebhookDelivery) string {
	return del.TaskID + "\x00" + string(del.Event)
}

// add counts one more failure of del before sending, at now, and
// returns how many there have been in a row. Entries not seen for
// forget are dropped once unsentPruneAt are tracked, then each time
// the map doubles, so that pruning costs O(1) a call on average even
// while a store outage keeps many deliveries failing.
func (u *unsent) add(del imagegen.WebhookDelivery, now time.Time, forget time.Duration) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.by == nil {
		u.by = map[string]unsentCount{}
	}
	if len(u.by) >= max(u.pruneAt, unsentPruneAt) {
		for k, c := range u.by {
			if now.Sub(c.last) > forget {
				delete(u.by, k)
			}
		}
		u.pruneAt = 2 * len(u.by)
	}
	k := unsentKey(del)
	c := u.by[k]
	c.n++
	c.last = now
	u.by[k] = c
	return c.n
}

// reset forgets del's failures: it was sent, or is done with.
func (u *unsent) reset(del imagegen.WebhookDelivery) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.by, unsentKey(del))
}
