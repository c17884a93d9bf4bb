package main

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

// serve's bound on connections from one address (limitConns with
// -max-conns-per-addr 2), for a client at a public address: past it a
// connection is answered 503 and closed, with a warning that names the
// address; the connections within the bound are served as before.
func TestLimitConnsBoundsAPublicAddress(t *testing.T) {
	is := is.New(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	is.NoErr(err)
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	public := netip.MustParseAddrPort("203.0.113.9:40000") // every connection seems to come from here
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(limitConns(fromAddr{ln, public}, 0, 2, nil, log)) }()
	t.Cleanup(func() { _ = srv.Close(); <-done })
	for i := range 3 {
		c, err := net.Dial("tcp", ln.Addr().String())
		is.NoErr(err)
		t.Cleanup(func() { _ = c.Close() })
		if code := sendGet(t, c, "/"); i < 2 {
			is.Equal(code, http.StatusOK) // within the bound
		} else {
			is.Equal(code, http.StatusServiceUnavailable) // the third from the address
		}
	}
	is.True(strings.Contains(logs.String(), "connections refused: too many open from one address"))
	is.True(strings.Contains(logs.String(), "203.0.113.9"))
}

// A reverse proxy's connections carry every client's: serve does not
// bound them, on a loopback, private or link-local address or one given
// as -trusted-proxy. Over loopback, here, serve keeps more connections
// open from one address than -max-conns-per-addr allows.
func TestServeDoesNotBoundAProxy(t *testing.T) {
	is := is.New(t)
	s := startServe(t, nil, "-workers", "0", "-max-conns-per-addr", "1")
	for range 3 {
		c, err := net.Dial("tcp", strings.TrimPrefix(s.base, "http://"))
		is.NoErr(err)
		t.Cleanup(func() { _ = c.Close() })
		is.Equal(sendGet(t, c, "/healthz"), http.StatusOK)
	}
	trusted := []netip.Prefix{netip.MustParsePrefix("203.0.113.0/24")}
	for addr, free := range map[string]bool{
		"127.0.0.1": true, "::1": true, "10.1.2.3": true, "172.16.0.9": true, "192.168.1.1": true,
		"fd00::1": true, "fe80::1": true, "169.254.1.1": true, "203.0.113.7": true, // the trusted /24
		"198.51.100.7": false, "2001:db8::1": false, "8.8.8.8": false,
	} {
		is.Equal(unbounded(netip.MustParseAddr(addr), trusted), free) // bounded or not, by address
	}
}

// serve keeps at most -max-conns connections open in all: with one
// open, the next waits in the backlog, unanswered, until it closes.
func TestServeBoundsConnectionsInAll(t *testing.T) {
	is := is.New(t)
	s := startServe(t, nil, "-workers", "0", "-max-conns", "1")
	addr := strings.TrimPrefix(s.base, "http://")
	first, err := net.Dial("tcp", addr)
	is.NoErr(err)
	defer first.Close()
	is.Equal(sendGet(t, first, "/healthz"), http.StatusOK)
	second, err := net.Dial("tcp", addr)
	is.NoErr(err)
	defer second.Close()
	answered := make(chan int, 1)
	go func() { code, _ := status(second, "/healthz"); answered <- code }() // 0: no answer
	select {
	case code := <-answered:
		t.Fatalf("the second connection was answered (%d) while the first was open", code)
	case <-time.After(300 * time.Millisecond):
	}
	_ = first.Close()
	select {
	case code := <-answered:
		is.Equal(code, http.StatusOK)
	case <-time.After(10 * time.Second):
		t.Fatal("the second connection was not served once the first closed")
	}
}

// fromAddr is a listener whose connections report addr as their peer.
type fromAddr struct {
	net.Listener
	addr netip.AddrPort
}

func (l fromAddr) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return peerConn{c, net.TCPAddrFromAddrPort(l.addr)}, nil
}

type peerConn struct {
	net.Conn
	peer net.Addr
}

func (c peerConn) RemoteAddr() net.Addr { return c.peer }

// sendGet sends GET path on c, keeping it open, and returns the status.
func sendGet(t *testing.T, c net.Conn, path string) int {
	t.Helper()
	code, err := status(c, path)
	if err != nil {
		t.Fatal(err)
	}
	return code
}

// status sends GET path on c, keeping it open, and returns the status.
func status(c net.Conn, path string) (int, error) {
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		return 0, err
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	return res.StatusCode, nil
}

// serve reads at most 64 KiB of a request's headers (net/http's default
// is 1 MiB, which, with 512 connections from one address held for the
// header timeout, let one client hold half a gigabyte): past it the
// request is answered 431, and headers of a size clients send pass.
func TestServeBoundsHeaderSize(t *testing.T) {
	is := is.New(t)
	s := startServe(t, nil, "-workers", "0")
	get := func(cookie int) int {
		r, err := http.NewRequest(http.MethodGet, s.base+"/healthz", nil)
		is.NoErr(err)
		r.Header.Set("Cookie", "c="+strings.Repeat("x", cookie))
		res, err := http.DefaultClient.Do(r)
		is.NoErr(err)
		_ = res.Body.Close()
		return res.StatusCode
	}
	is.Equal(get(8<<10), http.StatusOK)
	is.Equal(get(100<<10), http.StatusRequestHeaderFieldsTooLarge)
}
