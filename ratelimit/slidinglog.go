package ratelimit

import "time"

// slidingLog is one key's state: the times of its most recent accepted
// requests, oldest first, in a ring that grows on demand up to the limit.
// Times are offsets from the limiter's epoch, so they are 8 bytes each and
// keep the monotonic clock reading of the process clock.
type slidingLog struct {
	stamps []time.Duration // ring buffer; len(stamps) is its capacity
	start  int             // index of the oldest stamp
	count  int             // stamps in use
}

// initialLogCap is the ring's first capacity: the default limit fits at once.
const initialLogCap = 16

// decision is what take reports.
type decision struct {
	allowed   bool
	remaining int           // requests left in the window after this one
	wait      time.Duration // until one more request is allowed (0 if remaining > 0)
}

// take records a request at now if fewer than limit were accepted in the
// window (now-window, now], and reports the outcome. A refused request is
// not recorded. A request accepted at t stops counting at t+window.
func (l *slidingLog) take(now, window time.Duration, limit int) decision {
	if l.count > 0 {
		if newest := l.at(l.count - 1); now < newest {
			// The clock stepped back, or a caller that read it later took the
			// lock first: count this request at the newest stamp, keeping
			// the log ordered.
			now = newest
		}
	}
	l.expire(now, window)
	if l.count >= limit {
		return decision{remaining: 0, wait: l.at(0) + window - now}
	}
	l.push(now, limit)
	d := decision{allowed: true, remaining: limit - l.count}
	if d.remaining == 0 {
		d.wait = l.at(0) + window - now
	}
	return d
}

// idle reports that every stamp is out of the window at now, so the log
// says nothing more than an absent one would.
func (l *slidingLog) idle(now, window time.Duration) bool {
	return l.count == 0 || now-l.at(l.count-1) >= window
}

// newest returns the latest stamp (0 for an empty log).
func (l *slidingLog) newest() time.Duration {
	if l.count == 0 {
		return 0
	}
	return l.at(l.count - 1)
}

// at returns the i-th oldest stamp.
func (l *slidingLog) at(i int) time.Duration {
	i += l.start
	if i >= len(l.stamps) {
		i -= len(l.stamps)
	}
	return l.stamps[i]
}

// expire drops the stamps that are out of the window at now.
func (l *slidingLog) expire(now, window time.Duration) {
	for l.count > 0 && now-l.stamps[l.start] >= window {
		l.start++
		if l.start == len(l.stamps) {
			l.start = 0
		}
		l.count--
	}
}

// push appends now, growing the ring (up to limit) when it is full.
func (l *slidingLog) push(now time.Duration, limit int) {
	if l.count == len(l.stamps) {
		grown := make([]time.Duration, min(max(2*len(l.stamps), initialLogCap), limit))
		for i := range l.count {
			grown[i] = l.at(i)
		}
		l.stamps, l.start = grown, 0
	}
	i := l.start + l.count
	if i >= len(l.stamps) {
		i -= len(l.stamps)
	}
	l.stamps[i] = now
	l.count++
}
