package client

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/retry"
)

// budget is a Client's view of its key's rate limit, shared by all the
// goroutines that use the Client. Before a request, acquire waits until
// the key may make one more; after it, release learns from the answer's
// RateLimit and Retry-After headers.
//
// The estimate is conservative. A request that was alone in flight (no
// other was sent while it was) learns the exact budget: the server's r
// counts every earlier request. A request that overlapped others learns
// r minus those others, since the server may have counted them after it;
// and then the estimate only goes down. When the estimate reaches zero
// and nothing is in flight, one request probes for the real state. A
// server's window only frees budget as time passes, so an old r is never
// too high for this Client.
type budget struct {
	clock  imagegen.Clock
	onWait func(time.Duration) // told before a wait for the key's limit; may be nil

	mu       sync.Mutex
	mode     meterMode
	tokens   int       // requests that may start now
	until    time.Time // no request before this (r=0, or a 429)
	inflight map[*ticket]struct{}
	changed  chan struct{} // closed and replaced on every release
}

type meterMode int

const (
	meterUnknown meterMode = iota // no answer yet: one request at a time
	unmetered                     // answers carry no RateLimit header
	metered
)

// ticket is one request in flight.
type ticket struct {
	overlap int // requests that were in flight at some time during this one
}

func newBudget(clock imagegen.Clock) *budget {
	return &budget{clock: clock, tokens: 1, inflight: make(map[*ticket]struct{}), changed: make(chan struct{})}
}

// acquire waits until one more request may start. Every ticket must be
// given back with release.
func (b *budget) acquire(ctx context.Context) (*ticket, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		t, wait, changed := b.take()
		switch {
		case t != nil:
			return t, nil
		case wait > 0:
			if b.onWait != nil {
				b.onWait(wait)
			}
			if err := sleep(ctx, b.clock, wait); err != nil {
				return nil, err
			}
		default:
			select {
			case <-changed:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
}

// take starts a request if one may start now. If not, it returns how long
// the key is blocked for, or else a channel closed when a request in
// flight ends.
func (b *budget) take() (t *ticket, wait time.Duration, changed <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if wait := b.until.Sub(b.clock.Now()); wait > 0 {
		return nil, wait, nil
	}
	if b.tokens <= 0 && len(b.inflight) == 0 {
		b.tokens = 1 // probe: nothing in flight can tell us more
	}
	if b.mode != unmetered && b.tokens <= 0 {
		return nil, 0, b.changed
	}
	b.tokens--
	t = &ticket{overlap: len(b.inflight)}
	for other := range b.inflight {
		other.overlap++
	}
	b.inflight[t] = struct{}{}
	return t, 0, nil
}

// release ends t with the answer's status and headers (status 0 and a nil
// header when no answer came).
func (b *budget) release(t *ticket, status int, h http.Header) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	delete(b.inflight, t)
	if r, reset, ok := parseRateLimit(h.Get("RateLimit")); ok {
		if b.mode != metered || t.overlap == 0 {
			b.tokens = r - t.overlap
		} else {
			b.tokens = min(b.tokens, r-t.overlap)
		}
		b.mode = metered
		if r <= 0 {
			b.block(now, reset)
		}
	} else if b.mode == meterUnknown && status >= 200 && status < 300 {
		b.mode = unmetered
	}
	if status == http.StatusTooManyRequests {
		wait, ok := retry.After(h, now)
		if !ok || wait <= 0 {
			wait = time.Second
		}
		b.block(now, wait)
		b.tokens = min(b.tokens, 0)
	}
	close(b.changed)
	b.changed = make(chan struct{})
}

// maxLimitWait caps the wait an answer asks for (Retry-After, or a
// RateLimit reset): it holds every goroutine of the Client back, and one
// answer of a proxy in the way (say, "Retry-After: 86400"), or a wrong
// one, must not stop them all for that long; past it, one request probes
// and a server that still refuses says so again. The imagegen server
// asks for a minute at most.
const maxLimitWait = 5 * time.Minute

// block holds requests back for wait from now (at most maxLimitWait),
// unless they are held back longer already.
func (b *budget) block(now time.Time, wait time.Duration) {
	if until := now.Add(min(wait, maxLimitWait)); until.After(b.until) {
		b.until = until
	}
}

// sleep waits for d on clock, or until ctx ends.
func sleep(ctx context.Context, clock imagegen.Clock, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	select {
	case <-clock.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// parseRateLimit reads a RateLimit header of the IETF httpapi draft,
// `"default";r=9;t=0`: r requests are left, and t seconds until one more
// is allowed. Of several policies, the tightest counts.
func parseRateLimit(v string) (r int, reset time.Duration, ok bool) {
	if v == "" {
		return 0, 0, false
	}
	for item := range strings.SplitSeq(v, ",") {
		var ir, it int64 = -1, 0
		params := strings.Split(item, ";")
		for _, p := range params[1:] {
			name, val, found := strings.Cut(strings.TrimSpace(p), "=")
			if !found {
				continue
			}
			n, err := strconv.ParseInt(val, 10, 32)
			if err != nil || n < 0 {
				continue
			}
			switch name {
			case "r":
				ir = n
			case "t":
				it = n
			}
		}
		if ir < 0 {
			continue
		}
		d := time.Duration(it) * time.Second
		switch {
		case !ok, int(ir) < r:
			r, reset = int(ir), d
		case int(ir) == r:
			reset = max(reset, d)
		}
		ok = true
	}
	return r, reset, ok
}

// longPollApplied reports whether Preference-Applied holds a wait
// preference.
func longPollApplied(h http.Header) bool {
	for _, v := range h.Values("Preference-Applied") {
		for pref := range strings.SplitSeq(v, ",") {
			name, _, _ := strings.Cut(strings.TrimSpace(pref), "=")
			if strings.EqualFold(strings.TrimSpace(name), "wait") {
				return true
			}
		}
	}
	return false
}
