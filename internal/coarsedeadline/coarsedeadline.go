// Package coarsedeadline wraps a listener so that the deadlines of its
// connections cost no timer each.
//
// An http.Server with timeouts sets four or five deadlines a request (the
// header read, the whole request read, the write, the write cleared, the
// idle wait), and each call of net.Conn's SetReadDeadline or
// SetWriteDeadline reads the clock and moves a runtime timer. The
// connections of a Listener keep a deadline in the future as a plain
// value instead; one goroutine per listener (the sweeper) looks at every
// connection each Resolution and applies the deadlines that have passed
// to the underlying connection, which makes its pending and later reads
// or writes fail with a timeout as it would have at the deadline. A
// deadline therefore fires between its time and one Resolution later,
// never before. A deadline already in the past (net/http sets one to
// interrupt a read) or at the present (a websocket library interrupting
// a read on a hijacked connection), and the zero time (no deadline),
// reach the underlying connection at once, as without the wrapper.
package coarsedeadline

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/imagegen/imagegen/internal/netconn"
)

// DefaultResolution is Config.Resolution's default.
const DefaultResolution = 250 * time.Millisecond

// Config configures a Listener.
type Config struct {
	// Resolution is how often the sweeper applies passed deadlines: the
	// most a deadline may fire late. Default: DefaultResolution.
	Resolution time.Duration
}

// Listener is a net.Listener whose connections' deadlines are coarse
// (see the package documentation). Its sweeper runs until the listener
// is closed and its last connection too.
type Listener struct {
	net.Listener
	res time.Duration
	now atomic.Pointer[time.Time] // the sweeper's last clock reading

	mu     sync.Mutex
	conns  map[*Conn]struct{}
	closed bool
}

// Listen wraps ln.
func Listen(ln net.Listener, cfg Config) *Listener {
	res := cfg.Resolution
	if res <= 0 {
		res = DefaultResolution
	}
	l := newListener(ln)
	l.res = res
	go l.sweep()
	return l
}

// newListener is a Listener without its sweeper.
func newListener(ln net.Listener) *Listener {
	l := &Listener{Listener: ln, conns: make(map[*Conn]struct{})}
	now := time.Now()
	l.now.Store(&now)
	return l
}

// Accept waits for the next connection and returns it wrapped.
func (l *Listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	w := &Conn{Conn: c, l: l}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed && len(l.conns) == 0 {
		// Accepted as Close ran, and the sweeper may have ended: no one
		// would apply this connection's deadlines.
		_ = c.Close()
		return nil, net.ErrClosed
	}
	l.conns[w] = struct{}{}
	return w, nil
}

// Close closes the listener. The connections it accepted stay open, and
// their deadlines are kept, until they are closed.
func (l *Listener) Close() error {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	return l.Listener.Close()
}

// sweep applies the deadlines that have passed, every l.res, until the
// listener and all its connections are closed.
func (l *Listener) sweep() {
	t := time.NewTicker(l.res)
	defer t.Stop()
	for range t.C {
		if l.sweepOnce(time.Now()) {
			return
		}
	}
}

// sweepOnce applies the deadlines that have passed by now, and reports
// whether the sweeper is done: the listener and its connections closed.
func (l *Listener) sweepOnce(now time.Time) (done bool) {
	l.now.Store(&now)
	l.mu.Lock()
	if l.closed && len(l.conns) == 0 {
		l.mu.Unlock()
		return true
	}
	conns := make([]*Conn, 0, len(l.conns))
	for c := range l.conns {
		conns = append(conns, c)
	}
	l.mu.Unlock()
	for _, c := range conns {
		c.applyPassed(now)
	}
	return false
}

// passed reports whether t has passed: before the sweeper's last clock
// reading, or, when it is not that far from it (a deadline set to now
// to interrupt a read, as websocket libraries do on a hijacked
// connection), by the clock. The deadlines of net/http's timeouts, seconds
// away, cost no clock read.
func (l *Listener) passed(t time.Time) bool {
	now := *l.now.Load()
	if t.Before(now) {
		return true
	}
	return t.Before(now.Add(2*l.res)) && !t.After(time.Now())
}

// Conn is a connection of a Listener.
type Conn struct {
	net.Conn
	l *Listener

	mu          sync.Mutex
	read, write deadline
	closed      bool
}

// deadline is one of a connection's deadlines: the time it was set to,
// and whether that time is on the underlying connection.
type deadline struct {
	at      time.Time
	applied bool
}

// SetDeadline sets both deadlines.
func (c *Conn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return joinErr(c.set(&c.read, t, c.Conn.SetReadDeadline), c.set(&c.write, t, c.Conn.SetWriteDeadline))
}

// SetReadDeadline sets the read deadline.
func (c *Conn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.set(&c.read, t, c.Conn.SetReadDeadline)
}

// SetWriteDeadline sets the write deadline.
func (c *Conn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.set(&c.write, t, c.Conn.SetWriteDeadline)
}

// set sets d to t: at once on the underlying connection (apply) when t
// is zero or has passed, else by the sweeper once it passes; c.mu is
// held.
func (c *Conn) set(d *deadline, t time.Time, apply func(time.Time) error) error {
	d.at = t
	switch {
	case !t.IsZero() && c.l.passed(t):
		d.applied = true
		return apply(t)
	case d.applied: // the underlying connection has a deadline that has passed: clear it
		d.applied = false
		return apply(time.Time{})
	}
	return nil
}

// applyPassed applies the deadlines that have passed by now.
func (c *Conn) applyPassed(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	if due(c.read, now) {
		c.read.applied = true
		_ = c.Conn.SetReadDeadline(c.read.at) // fails only on a closed connection
	}
	if due(c.write, now) {
		c.write.applied = true
		_ = c.Conn.SetWriteDeadline(c.write.at)
	}
}

// due reports whether d has passed by now and is not yet applied.
func due(d deadline, now time.Time) bool {
	return !d.applied && !d.at.IsZero() && !d.at.After(now)
}

// Close closes the connection and stops watching its deadlines.
func (c *Conn) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.l.mu.Lock()
	delete(c.l.conns, c)
	c.l.mu.Unlock()
	return c.Conn.Close()
}

// ReadFrom passes the copy on to the underlying connection when it can
// do it itself (a TCP connection's sendfile or splice); net/http copies
// file bodies through it.
func (c *Conn) ReadFrom(r io.Reader) (int64, error) { return netconn.ReadFrom(c.Conn, r) }

// CloseWrite shuts down the writing side, when the underlying
// connection can (TCP): net/http does before closing a connection whose
// request it did not read to its end.
func (c *Conn) CloseWrite() error { return netconn.CloseWrite(c.Conn) }

func joinErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
