package redistest

import (
	"bytes"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
)

// ReplyDropper is a loopback TCP proxy in front of a Redis server that,
// once armed, lets the next command holding a marker through, waits for
// the server's reply and closes the client's connection instead of
// passing the reply on: the command ran, and its caller sees a broken
// connection, as when a network or a proxy fails between the two. A
// go-redis client then sends the command again (its retries on a broken
// connection), so a test sees what a write run twice does. A reply that
// is NOSCRIPT is passed on (the EVAL that follows holds the marker too).
type ReplyDropper struct {
	Addr string // the proxy's host:port, for the client

	mu      sync.Mutex
	marker  []byte // nil: not armed
	then    func() // run once the reply is dropped, before the client's connection closes (ArmThen)
	dropped int
}

// StartReplyDropper starts a proxy to target (host:port), stopped when
// the test ends.
func StartReplyDropper(t testing.TB, target string) *ReplyDropper {
	t.Helper()
	p := &ReplyDropper{}
	p.Addr = startProxy(t, target, p.serve)
	return p
}

// Arm makes the proxy drop the reply of the next command whose bytes
// hold marker.
func (p *ReplyDropper) Arm(marker string) { p.ArmThen(marker, nil) }

// ArmThen is Arm that runs then (when not nil) once the reply is
// dropped, before the client's connection is closed: what happens
// there happens before the client can send the command again (a
// failover to a server that has not loaded the script, say).
func (p *ReplyDropper) ArmThen(marker string, then func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.marker, p.then = []byte(marker), then
}

// Dropped is how many replies the proxy has dropped.
func (p *ReplyDropper) Dropped() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dropped
}

// serve proxies one connection until either side closes it.
func (p *ReplyDropper) serve(client, server net.Conn) {
	defer client.Close()
	defer server.Close()
	var (
		mu   sync.Mutex
		drop []byte // not nil: the next reply read from server is dropped (the marker that armed it)
		then func() // drop's ArmThen
	)
	done := make(chan struct{})
	go func() { // server to client
		defer close(done)
		buf := make([]byte, 64<<10)
		for {
			n, err := server.Read(buf)
			if n > 0 {
				mu.Lock()
				marker, after := drop, then
				drop, then = nil, nil
				mu.Unlock()
				if marker != nil && bytes.HasPrefix(buf[:n], []byte("-NOSCRIPT")) {
					p.ArmThen(string(marker), after) // the EVAL that follows holds it too
					marker = nil
				}
				if marker != nil {
					p.mu.Lock()
					p.dropped++
					p.mu.Unlock()
					if after != nil {
						after()
					}
					_ = client.Close()
					return
				}
				if _, err := client.Write(buf[:n]); err != nil {
					return
				}
			}
			if err != nil {
				_ = client.Close()
				return
			}
		}
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := client.Read(buf)
		if n > 0 {
			p.mu.Lock()
			if p.marker != nil && bytes.Contains(buf[:n], p.marker) {
				mu.Lock()
				drop, then = p.marker, p.then
				mu.Unlock()
				p.marker, p.then = nil, nil
			}
			p.mu.Unlock()
			if _, err := server.Write(buf[:n]); err != nil {
				break
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				_ = server.Close()
			}
			break
		}
	}
	_ = server.Close()
	<-done
}
