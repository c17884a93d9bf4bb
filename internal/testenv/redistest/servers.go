package redistest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/imagegen/imagegen/internal/testenv"
	goredis "github.com/redis/go-redis/v9"
)

// Server is a redis-server (or sentinel) process of the test's own, on a
// loopback port; it is stopped by its PID when the test ends.
type Server struct {
	Port int
	Dir  string
	args []string
	bin  string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	out  bytes.Buffer
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)) }

// PID is the process id of the running server (0 when it is not running).
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Binary returns the path of redis-server, or skips the test unless
// IMAGEGEN_TEST_REDIS is set (the tests that start their own servers run
// only where a real Redis is available) and fails it when redis-server
// is not on PATH then.
func Binary(t testing.TB) string {
	t.Helper()
	if os.Getenv(EnvVar) == "" {
		t.Skip(EnvVar + " is not set: this test starts its own redis-server processes (on free loopback ports), and runs only where a real Redis is available")
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("%s is set but redis-server is not on PATH: %v", EnvVar, err)
	}
	return bin
}

// StartServer starts redis-server on port (0: a free one) with extra
// arguments, in a directory of its own, and waits until it answers.
func StartServer(t testing.TB, port int, extra ...string) *Server {
	t.Helper()
	if port == 0 {
		port = FreePort(t)
	}
	dir := t.TempDir()
	return startProcess(t, port, dir, append([]string{"--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--dir", dir, "--save", "", "--appendonly", "no"}, extra...))
}

// startProcess starts redis-server with args, stopped when the test ends.
func startProcess(t testing.TB, port int, dir string, args []string) *Server {
	t.Helper()
	s := &Server{Port: port, Dir: dir, bin: Binary(t), args: args}
	s.Start(t)
	t.Cleanup(s.Kill)
	return s
}

// Start starts the server again (after Kill) with the same arguments, and
// waits until it answers PING.
func (s *Server) Start(t testing.TB) {
	t.Helper()
	cmd := exec.Command(s.bin, s.args...)
	s.mu.Lock()
	s.out.Reset()
	cmd.Stdout, cmd.Stderr = &lockedWriter{mu: &s.mu, w: &s.out}, &lockedWriter{mu: &s.mu, w: &s.out}
	s.mu.Unlock()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()
	rdb := goredis.NewClient(&goredis.Options{Addr: s.Addr(), MaxRetries: -1})
	defer rdb.Close()
	testenv.EventuallyNoError(t, 10*time.Second, "redis-server on "+s.Addr()+" to answer", func() error {
		err := rdb.Ping(context.Background()).Err()
		if err == nil {
			return nil
		}
		select {
		case <-done:
			t.Fatalf("redis-server %s exited at start:\n%s", strings.Join(s.args, " "), s.Output())
		default:
		}
		return fmt.Errorf("%w; its output:\n%s", err, s.Output())
	})
}

// StartAsReplicaOf starts the server again (after Kill) as a replica of
// master that serves nothing until it has master's data, as a node whose
// configuration the sentinels rewrote comes back, and returns once it is
// in sync. Started with its first arguments, a master with no
// persistence comes back as an empty master until the sentinels turn it
// into a replica, and a client that asks a sentinel not yet told sees an
// empty data set (Redis's own warning about restarting instances without
// persistence). Until its first sync it also has replica-priority 0, so
// that no failover picks it empty: on a loaded machine (the sentinels
// here call a master down after 1 s) a second failover could otherwise
// promote it, and every key would be gone.
func (s *Server) StartAsReplicaOf(t testing.TB, master *Server) {
	t.Helper()
	s.args = append(slices.Clone(s.args), "--replicaof", "127.0.0.1", strconv.Itoa(master.Port), "--replica-serve-stale-data", "no",
		"--replica-priority", "0")
	s.Start(t)
	s.WaitInSync(t, 60*time.Second)
	if err := s.Client(t).ConfigSet(context.Background(), "replica-priority", "100").Err(); err != nil {
		t.Fatalf("replica %s: %v", s.Addr(), err)
	}
}

// WaitInSync waits up to timeout until the server, a replica, has its
// link to its master up (its first sync done).
func (s *Server) WaitInSync(t testing.TB, timeout time.Duration) {
	t.Helper()
	rdb := s.Client(t)
	testenv.EventuallyNoError(t, timeout, "replica "+s.Addr()+" is in sync", func() error {
		info, err := rdb.Info(context.Background(), "replication").Result()
		if err != nil {
			return err
		}
		if !strings.Contains(info, "master_link_status:up") {
			return errors.New("link not up")
		}
		return nil
	})
}

// Kill sends SIGKILL to the server's process (no chance to save or hand
// over) and waits for it to end. Killing a stopped server does nothing.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// Output is what the server printed.
func (s *Server) Output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String()
}

// Client returns a client of this one server, closed when the test ends.
func (s *Server) Client(t testing.TB) *goredis.Client {
	t.Helper()
	rdb := goredis.NewClient(&goredis.Options{Addr: s.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// FreePort returns a loopback TCP port that was free a moment ago, whose
// cluster bus port (port + 10000) was free too.
func FreePort(t testing.TB) int {
	t.Helper()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		if port+10000 > 65535 {
			_ = l.Close()
			continue
		}
		bus, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port+10000)))
		_ = l.Close()
		if err != nil {
			continue
		}
		_ = bus.Close()
		return port
	}
	t.Fatal("no free loopback port with a free port 10000 above it")
	return 0
}

// lockedWriter writes to w under mu (a process's output, copied by its
// goroutines).
type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// writeConfig writes a config file for a server into its own directory.
func writeConfig(t testing.TB, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
