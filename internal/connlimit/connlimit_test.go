package connlimit

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// serve runs an HTTP server on a loopback listener wrapped with cfg and
// returns its address; every request answers 204.
func serve(t *testing.T, cfg Config) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(Listen(ln, cfg)) }()
	t.Cleanup(func() { _ = srv.Close(); <-done })
	return ln.Addr().String()
}

// get sends one request on c and returns the status, or an error when
// the server closed the connection without an answer.
func get(c net.Conn) (int, error) {
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		return 0, err
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, err
	}
	_ = res.Body.Close()
	return res.StatusCode, nil
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// One address holds at most PerAddr connections: the next is answered
// 503 and closed, and once one of the first closes a new one is served
// again.
func TestPerAddrBound(t *testing.T) {
	var refused atomic.Int32
	addr := serve(t, Config{PerAddr: 2, Refused: func(netip.Addr) { refused.Add(1) }})
	a, b := dial(t, addr), dial(t, addr)
	for _, c := range []net.Conn{a, b} {
		if code, err := get(c); err != nil || code != http.StatusNoContent {
			t.Fatalf("a connection within the bound: %d, %v; want 204", code, err)
		}
	}
	if code, err := get(dial(t, addr)); err != nil || code != http.StatusServiceUnavailable {
		t.Fatalf("a third connection from the address: %d, %v; want 503", code, err)
	}
	if refused.Load() != 1 {
		t.Errorf("Refused called %d times, want 1", refused.Load())
	}
	_ = a.Close()
	// The server notices the close on its next read; then the slot is free.
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, err := get(dial(t, addr))
		if err == nil && code == http.StatusNoContent {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no connection admitted after one of the two closed: %d, %v", code, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// An exempt peer (a trusted proxy) is not bounded per address.
func TestExemptPeer(t *testing.T) {
	addr := serve(t, Config{PerAddr: 1, Exempt: func(a netip.Addr) bool { return a.IsLoopback() }})
	for i := range 3 {
		if code, err := get(dial(t, addr)); err != nil || code != http.StatusNoContent {
			t.Fatalf("connection %d from an exempt peer: %d, %v; want 204", i, code, err)
		}
	}
}

// With Max connections open, the next waits (it is not refused) and is
// served once one closes.
func TestMaxWaits(t *testing.T) {
	addr := serve(t, Config{Max: 1})
	a := dial(t, addr)
	if code, err := get(a); err != nil || code != http.StatusNoContent {
		t.Fatalf("the first connection: %d, %v", code, err)
	}
	b := dial(t, addr) // in the backlog: the TCP handshake completes, Accept waits
	answered := make(chan error, 1)
	go func() {
		code, err := get(b)
		if err == nil && code != http.StatusNoContent {
			err = errors.New(http.StatusText(code))
		}
		answered <- err
	}()
	select {
	case err := <-answered:
		t.Fatalf("the second connection was answered (%v) while the first was open", err)
	case <-time.After(300 * time.Millisecond):
	}
	_ = a.Close()
	select {
	case err := <-answered:
		if err != nil {
			t.Fatalf("the second connection, once the first closed: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the second connection was not served after the first closed")
	}
}

// Close ends an Accept that waits for a slot.
func TestCloseEndsAWaitingAccept(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := Listen(ln, Config{Max: 1})
	c := dial(t, ln.Addr().String())
	first, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	defer c.Close()
	got := make(chan error, 1)
	go func() { _, err := l.Accept(); got <- err }()
	time.Sleep(50 * time.Millisecond)
	_ = l.Close()
	select {
	case err := <-got:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Accept after Close: %v, want net.ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Accept still waits after Close")
	}
}

// IPv6 peers count by their /64, IPv4 peers by their address.
func TestKey(t *testing.T) {
	for in, want := range map[string]string{
		"2001:db8:1:2:aaaa::1": "2001:db8:1:2::",
		"2001:db8:1:2:bbbb::9": "2001:db8:1:2::",
		"192.0.2.7":            "192.0.2.7",
	} {
		if got := key(netip.MustParseAddr(in)); got != netip.MustParseAddr(want) {
			t.Errorf("key(%s) = %s, want %s", in, got, want)
		}
	}
}

// A connection keeps what net/http asks of a TCP connection beyond
// net.Conn: CloseWrite (the client reads EOF while the connection is
// open) and ReadFrom (sendfile and splice).
func TestConnPassesThroughTCP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := Listen(ln, Config{Max: 4, PerAddr: 4})
	defer l.Close()
	client := dial(t, ln.Addr().String())
	c, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, ok := c.(io.ReaderFrom); !ok {
		t.Error("the connection is not an io.ReaderFrom")
	}
	if _, err := c.(io.ReaderFrom).ReadFrom(strings.NewReader("hello")); err != nil {
		t.Fatal(err)
	}
	cw, ok := c.(interface{ CloseWrite() error })
	if !ok {
		t.Fatal("the connection has no CloseWrite")
	}
	if err := cw.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	_ = client.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(client)
	if err != nil || string(got) != "hello" {
		t.Fatalf("the client read %q, %v; want hello, then EOF", got, err)
	}
}

// noAddr is a connection whose RemoteAddr is nil, as some are (seen on
// Linux TCP, golang/go#59504, and on other network stacks): net/http
// serves it, and the listener must not panic in Accept, which would end
// the process.
type noAddr struct{ net.Conn }

func (noAddr) RemoteAddr() net.Addr { return nil }
func (noAddr) Close() error         { return nil }

type noAddrListener struct{ net.Listener }

func (noAddrListener) Accept() (net.Conn, error) { return noAddr{}, nil }

// A connection without a remote address is not counted against any
// address, and still holds its slot of Max until it closes.
func TestNilRemoteAddr(t *testing.T) {
	l := Listen(noAddrListener{}, Config{Max: 1, PerAddr: 1})
	c, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	if len(l.slots) != 1 || len(l.open) != 0 {
		t.Fatalf("%d slots taken, %d addresses counted; want 1 and 0", len(l.slots), len(l.open))
	}
	_ = c.Close()
	if len(l.slots) != 0 {
		t.Fatalf("%d slots taken after Close, want 0", len(l.slots))
	}
}
