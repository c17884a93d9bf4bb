// Package connlimit bounds the connections a listener keeps open: in
// all, and from any one peer address, so that one client cannot take the
// process's file descriptors (and with them the connections to its store)
// or every connection slot from the others.
//
// A connection past the per-address bound is answered at once with a
// plain HTTP 503 (Retry-After: 1, Connection: close) and closed: the
// listener serves HTTP/1.1 without TLS, as imagegen serve does. When the
// listener holds Max connections in all, Accept waits for one to close
// (as golang.org/x/net/netutil.LimitListener does): new clients wait in
// the kernel's backlog rather than being refused.
package connlimit

import (
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/imagegen/imagegen/internal/netconn"
)

// Config bounds a Listener's connections. A zero bound is no bound.
type Config struct {
	// Max is how many connections the listener keeps open at once in
	// all; Accept waits while it holds that many.
	Max int
	// PerAddr is how many connections one peer address keeps open at
	// once; one more is answered 503 and closed. IPv6 peers count by
	// their /64, which one host usually holds whole.
	PerAddr int
	// Exempt, when set, names peers that PerAddr does not bound: the
	// reverse proxies in front of the server, whose one address carries
	// every client's connections.
	Exempt func(netip.Addr) bool
	// Refused, when set, is called (from Accept's goroutine) for each
	// connection refused for its address.
	Refused func(peer netip.Addr)
}

// Listener is a net.Listener that keeps to its Config.
type Listener struct {
	net.Listener
	cfg   Config
	slots chan struct{} // one token per open connection; nil: no Max

	mu     sync.Mutex
	open   map[netip.Addr]int // open connections by peer (its /64 for IPv6)
	closed chan struct{}      // closed by Close: a waiting Accept returns
	once   sync.Once
}

// Listen wraps ln.
func Listen(ln net.Listener, cfg Config) *Listener {
	l := &Listener{Listener: ln, cfg: cfg, open: map[netip.Addr]int{}, closed: make(chan struct{})}
	if cfg.Max > 0 {
		l.slots = make(chan struct{}, cfg.Max)
	}
	return l
}

// busy is written to a connection refused for its address.
var busy = []byte("HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nConnection: close\r\n" +
	"Content-Type: text/plain; charset=utf-8\r\nContent-Length: " + strconv.Itoa(len(busyBody)) + "\r\n\r\n" + busyBody)

const busyBody = "too many connections from this address\n"

// refuseWrite bounds the write of busy to a refused connection.
const refuseWrite = time.Second

// Accept waits for a free slot (with Max), then for a connection that
// its peer's bound admits; connections past PerAddr are answered and
// closed on the way.
func (l *Listener) Accept() (net.Conn, error) {
	if l.slots != nil {
		select {
		case l.slots <- struct{}{}:
		case <-l.closed:
			return nil, net.ErrClosed
		}
	}
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			l.free()
			return nil, err
		}
		peer, counted := l.admit(c)
		if !counted && l.cfg.PerAddr > 0 && peer.IsValid() {
			l.refuse(c, peer)
			continue
		}
		return &conn{Conn: c, l: l, peer: peer, counted: counted}, nil
	}
}

// admit counts c against its peer's bound; counted is false when the
// bound is full (or when there is none to count against: no PerAddr, an
// exempt peer or an address that is not IP or is missing, and then peer
// is the zero Addr).
func (l *Listener) admit(c net.Conn) (peer netip.Addr, counted bool) {
	if l.cfg.PerAddr <= 0 {
		return netip.Addr{}, false
	}
	ra := c.RemoteAddr() // nil for some connections (golang/go#59504); net/http serves them
	if ra == nil {
		return netip.Addr{}, false
	}
	ap, err := netip.ParseAddrPort(ra.String())
	if err != nil {
		return netip.Addr{}, false
	}
	peer = ap.Addr().Unmap()
	if l.cfg.Exempt != nil && l.cfg.Exempt(peer) {
		return netip.Addr{}, false
	}
	peer = key(peer)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[peer] >= l.cfg.PerAddr {
		return peer, false
	}
	l.open[peer]++
	return peer, true
}

// key is what a peer counts as: an IPv4 address, or an IPv6 address's
// /64.
func key(a netip.Addr) netip.Addr {
	if a.Is4() {
		return a
	}
	p, _ := a.Prefix(64)
	return p.Addr()
}

// refuse answers c 503 and closes it.
func (l *Listener) refuse(c net.Conn, peer netip.Addr) {
	if l.cfg.Refused != nil {
		l.cfg.Refused(peer)
	}
	_ = c.SetWriteDeadline(time.Now().Add(refuseWrite))
	_, _ = c.Write(busy)
	_ = c.Close()
}

// release gives back what an open connection held.
func (l *Listener) release(peer netip.Addr, counted bool) {
	if counted {
		l.mu.Lock()
		if l.open[peer]--; l.open[peer] <= 0 {
			delete(l.open, peer)
		}
		l.mu.Unlock()
	}
	l.free()
}

// free gives back a slot of Max.
func (l *Listener) free() {
	if l.slots != nil {
		<-l.slots
	}
}

// Close closes the listener; an Accept waiting for a slot returns.
func (l *Listener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// conn gives its slot and its peer's count back when closed, once.
type conn struct {
	net.Conn
	l       *Listener
	peer    netip.Addr
	counted bool
	done    atomic.Bool
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	if c.done.CompareAndSwap(false, true) {
		c.l.release(c.peer, c.counted)
	}
	return err
}

// ReadFrom passes the copy on to the underlying connection when it can
// do it itself (a TCP connection's sendfile or splice); net/http copies
// file bodies through it.
func (c *conn) ReadFrom(r io.Reader) (int64, error) { return netconn.ReadFrom(c.Conn, r) }

// CloseWrite shuts down the writing side, when the underlying connection
// can (TCP): net/http does before closing a connection whose request it
// did not read to its end, so that the client reads the answer.
func (c *conn) CloseWrite() error { return netconn.CloseWrite(c.Conn) }
