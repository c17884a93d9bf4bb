package redistest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"

	goredis "github.com/redis/go-redis/v9"
)

// CommandHolder is a loopback TCP proxy in front of a Redis server
// that, once armed, holds back every write of a client holding a
// marker, unsent, and closes that client's connection: the client has
// written its command and reads no reply, while the command has not
// run yet, as when its bytes sit in a slow network or in the server's
// socket buffer. Release sends what it held on, in order, as a
// connection's late bytes would arrive, and returns once it has run.
type CommandHolder struct {
	Addr string // the proxy's host:port, for the client

	opt    *goredis.Options // the server's, for Release's own connection
	mu     sync.Mutex
	marker []byte   // nil: not armed
	held   [][]byte // the writes held back, in order
}

// StartCommandHolder starts a proxy to the server of opt (its address,
// and its credentials and database for Release), stopped when the test
// ends.
func StartCommandHolder(t testing.TB, opt *goredis.Options) *CommandHolder {
	t.Helper()
	h := &CommandHolder{opt: opt}
	h.Addr = startProxy(t, opt.Addr, h.serve)
	return h
}

// Arm makes the proxy hold back every write that holds marker, until
// Release.
func (h *CommandHolder) Arm(marker string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.marker = []byte(marker)
}

// Held is how many writes the proxy holds back.
func (h *CommandHolder) Held() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.held)
}

// Release disarms the proxy and sends the writes it held to the server,
// in order, on a connection of its own, then waits until they have run
// (a PING after them is answered).
func (h *CommandHolder) Release(t testing.TB) {
	t.Helper()
	h.mu.Lock()
	held := h.held
	h.marker, h.held = nil, nil
	h.mu.Unlock()
	c, err := net.Dial("tcp", h.opt.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var out []byte
	switch {
	case h.opt.Password != "" && h.opt.Username != "":
		out = command(out, "AUTH", h.opt.Username, h.opt.Password)
	case h.opt.Password != "":
		out = command(out, "AUTH", h.opt.Password)
	}
	out = command(out, "SELECT", strconv.Itoa(h.opt.DB))
	out = append(out, bytes.Join(held, nil)...)
	if _, err := c.Write(command(out, "PING")); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if line == "+PONG\r\n" {
			return
		}
	}
}

// serve proxies one connection until either side closes it.
func (h *CommandHolder) serve(client, server net.Conn) {
	defer client.Close()
	defer server.Close()
	go func() {
		_, _ = io.Copy(client, server)
		_ = client.Close()
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := client.Read(buf)
		if n > 0 {
			h.mu.Lock()
			hold := h.marker != nil && bytes.Contains(buf[:n], h.marker)
			if hold {
				h.held = append(h.held, bytes.Clone(buf[:n]))
			}
			h.mu.Unlock()
			if hold {
				return // the client's connection closes, its command unsent
			}
			if _, err := server.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// command appends a command of args to out, as RESP.
func command(out []byte, args ...string) []byte {
	out = fmt.Appendf(out, "*%d\r\n", len(args))
	for _, a := range args {
		out = fmt.Appendf(out, "$%d\r\n%s\r\n", len(a), a)
	}
	return out
}
