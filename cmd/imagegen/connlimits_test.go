package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

// serve bounds the connections one client address keeps open
// (-max-conns-per-addr): past it a connection is answered 503 with
// Retry-After and closed, and a warning names the address; the
// connections within the bound are served as before. A trusted proxy
// (-trusted-proxy) is not bounded.
func TestServeBoundsConnectionsPerAddress(t *testing.T) {
	is := is.New(t)
	s := startServe(t, nil, "-workers", "0", "-max-conns-per-addr", "2")
	addr := strings.TrimPrefix(s.base, "http://")
	var open []net.Conn
	for range 3 {
		c, err := net.Dial("tcp", addr)
		is.NoErr(err)
		t.Cleanup(func() { _ = c.Close() })
		open = append(open, c)
	}
	for i, c := range open {
		code := healthz(t, c)
		if i < 2 {
			is.Equal(code, http.StatusOK) // within the bound
		} else {
			is.Equal(code, http.StatusServiceUnavailable) // the third from the address
		}
	}
	is.True(strings.Contains(s.stderr.String(), "connections refused: too many open from one address"))

	trusted := startServe(t, nil, "-workers", "0", "-max-conns-per-addr", "1", "-trusted-proxy", "127.0.0.1")
	addr = strings.TrimPrefix(trusted.base, "http://")
	for range 3 {
		c, err := net.Dial("tcp", addr)
		is.NoErr(err)
		t.Cleanup(func() { _ = c.Close() })
		is.Equal(healthz(t, c), http.StatusOK) // a proxy's connections are not bounded
	}
}

// healthz sends GET /healthz on c, keeping it open, and returns the
// status.
func healthz(t *testing.T, c net.Conn) int {
	t.Helper()
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	return res.StatusCode
}
