package coarsedeadline

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"
)

// recorder is a net.Conn that records the deadlines set on it.
type recorder struct {
	net.Conn // nil: only the deadline methods are called
	mu       sync.Mutex
	calls    []string
}

func (r *recorder) SetReadDeadline(t time.Time) error  { r.record("read", t); return nil }
func (r *recorder) SetWriteDeadline(t time.Time) error { r.record("write", t); return nil }
func (r *recorder) Close() error                       { return nil }

func (r *recorder) record(which string, t time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t.IsZero() {
		r.calls = append(r.calls, which+" none")
		return
	}
	r.calls = append(r.calls, which+" "+t.UTC().Format(time.TimeOnly))
}

func (r *recorder) took() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.calls
	r.calls = nil
	return out
}

// oneConn is a listener that accepts c once.
type oneConn struct {
	net.Listener
	c net.Conn
}

func (o *oneConn) Accept() (net.Conn, error) { return o.c, nil }
func (o *oneConn) Close() error              { return nil }

func accepted(t *testing.T, c net.Conn) (*Listener, *Conn) {
	t.Helper()
	l := newListener(&oneConn{c: c})
	nc, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	return l, nc.(*Conn)
}

func equal(t *testing.T, got []string, want ...string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("calls %q, want %q", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("calls %q, want %q", got, want)
		}
	}
}

// A deadline in the future reaches the connection only once a sweep sees
// it passed; moving it before then costs the connection nothing.
func TestFutureDeadlinesWaitForTheSweep(t *testing.T) {
	rec := &recorder{}
	l, c := accepted(t, rec)
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	l.sweepOnce(t0)
	for i := range 3 { // an idle connection's deadline pushed on and on
		if err := c.SetReadDeadline(t0.Add(time.Duration(10+i) * time.Second)); err != nil {
			t.Fatal(err)
		}
		if err := c.SetWriteDeadline(t0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	equal(t, rec.took())
	l.sweepOnce(t0.Add(11 * time.Second)) // the read deadline (12:00:12) has not passed
	equal(t, rec.took())
	l.sweepOnce(t0.Add(12 * time.Second))
	equal(t, rec.took(), "read 12:00:12")
	l.sweepOnce(t0.Add(13 * time.Second)) // applied once
	equal(t, rec.took())
	l.sweepOnce(t0.Add(time.Hour))
	equal(t, rec.took(), "write 12:01:00")

	// A later deadline clears the one applied, and waits for its sweep.
	if err := c.SetReadDeadline(t0.Add(2 * time.Hour)); err != nil {
		t.Fatal(err)
	}
	equal(t, rec.took(), "read none")
	l.sweepOnce(t0.Add(2 * time.Hour))
	equal(t, rec.took(), "read 14:00:00")
}

// A deadline that has passed (net/http sets one to interrupt a read) and
// the zero time reach the connection at once.
func TestPassedAndZeroDeadlinesApplyAtOnce(t *testing.T) {
	rec := &recorder{}
	l, c := accepted(t, rec)
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	l.sweepOnce(t0)
	if err := c.SetReadDeadline(time.Unix(1, 0)); err != nil {
		t.Fatal(err)
	}
	equal(t, rec.took(), "read 00:00:01")
	if err := c.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	equal(t, rec.took(), "read none")
	if err := c.SetReadDeadline(time.Time{}); err != nil { // nothing applied: nothing to clear
		t.Fatal(err)
	}
	equal(t, rec.took())
	if err := c.SetDeadline(t0.Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	equal(t, rec.took(), "read 11:59:59", "write 11:59:59")
	l.sweepOnce(t0.Add(time.Hour)) // already applied
	equal(t, rec.took())
}

// A read blocked on a connection whose deadline the sweep finds passed
// fails with os.ErrDeadlineExceeded, as it would have at the deadline;
// once the deadline is moved on, reads work again.
func TestASweptDeadlineInterruptsARead(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	l, c := accepted(t, a)
	defer c.Close()
	now := time.Now()
	l.sweepOnce(now.Add(-time.Hour))                                 // the sweeper's clock an hour behind
	if err := c.SetReadDeadline(now.Add(-time.Minute)); err != nil { // not passed by its clock
		t.Fatal(err)
	}
	read := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 1))
		read <- err
	}()
	l.sweepOnce(now)
	if err := <-read; !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read: %v, want a deadline error", err)
	}
	if err := c.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = b.Write([]byte("x")) }()
	if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
		t.Fatalf("read after the deadline was cleared: %v", err)
	}
}

// The sweeper ends once the listener and its last connection are closed.
func TestTheSweeperEndsWithTheLastConnection(t *testing.T) {
	l, c := accepted(t, &recorder{})
	now := time.Now()
	if l.sweepOnce(now) {
		t.Fatal("done with the listener open")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if l.sweepOnce(now) {
		t.Fatal("done with a connection open")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if !l.sweepOnce(now) {
		t.Fatal("not done with everything closed")
	}
}

// closeCounter is a recorder that counts its Close calls.
type closeCounter struct {
	recorder
	closes int
}

func (c *closeCounter) Close() error { c.closes++; return nil }

// A connection the underlying listener hands over after Close, once the
// sweeper may have ended (no connection left), is closed and refused:
// no one would apply its deadlines.
func TestAConnectionAcceptedAfterTheLastIsRefused(t *testing.T) {
	late := &closeCounter{}
	l := newListener(&oneConn{c: late})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if !l.sweepOnce(time.Now()) {
		t.Fatal("the sweeper is not done with the listener closed and no connection")
	}
	if c, err := l.Accept(); !errors.Is(err, net.ErrClosed) || c != nil {
		t.Fatalf("Accept after the sweeper ended = %v, %v; want net.ErrClosed", c, err)
	}
	if late.closes != 1 {
		t.Fatalf("the refused connection was closed %d times, want once", late.closes)
	}
}

// An http.Server with timeouts serves keep-alive requests through the
// wrapped listener.
func TestServesHTTP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") }),
		ReadHeaderTimeout: time.Minute, ReadTimeout: time.Minute, WriteTimeout: time.Minute, IdleTimeout: time.Minute,
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(Listen(ln, Config{})) }()
	client := &http.Client{Transport: &http.Transport{}}
	for range 5 {
		resp, err := client.Get("http://" + ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if string(body) != "ok" {
			t.Fatalf("body %q", body)
		}
	}
	client.CloseIdleConnections()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		t.Fatal(err)
	}
}

// A deadline set to the present (a websocket library interrupting a read
// on a hijacked connection) applies at once, though the sweeper's clock
// is behind it.
func TestADeadlineOfNowAppliesAtOnce(t *testing.T) {
	rec := &recorder{}
	l, c := accepted(t, rec)
	l.res = time.Hour
	l.sweepOnce(time.Now().Add(-time.Minute)) // the sweeper's last reading, a minute ago
	now := time.Now()
	if err := c.SetReadDeadline(now); err != nil {
		t.Fatal(err)
	}
	equal(t, rec.took(), "read "+now.UTC().Format(time.TimeOnly))
	if err := c.SetWriteDeadline(time.Now().Add(time.Minute)); err != nil { // still a minute away: for the sweeper
		t.Fatal(err)
	}
	equal(t, rec.took())
}
