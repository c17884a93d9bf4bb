package redistest

import (
	"net"
	"sync"
	"testing"
)

// startProxy listens on a free loopback port and, for each client that
// connects, dials target and runs serve with the two connections, until
// the test ends: then it stops listening, closes every connection it
// made and waits for the serve calls to return. It returns the
// listener's host:port.
func startProxy(t testing.TB, target string, serve func(client, server net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var conns sync.Map // net.Conn → struct{}, closed at the end
	t.Cleanup(func() {
		_ = ln.Close()
		conns.Range(func(c, _ any) bool { _ = c.(net.Conn).Close(); return true })
		wg.Wait()
	})
	wg.Go(func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", target)
			if err != nil {
				_ = client.Close()
				continue
			}
			conns.Store(client, struct{}{})
			conns.Store(server, struct{}{})
			wg.Go(func() { serve(client, server) })
		}
	})
	return ln.Addr().String()
}
