package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/matryer/is"
	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/internal/testenv/redistest"
)

// These helpers run real processes: redis-server on a port of our own,
// and the imagegen binary built from this package. Tests that need them
// skip when redis-server is not installed. Every process is stopped by
// its PID when the test ends.

// ctx is the context of the tests' calls that are not cancelled.
var ctx = context.Background()

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// imagegenBinary builds this command once per test run.
func imagegenBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "imagegen-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "imagegen")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// redisServer is a redis-server process of the test's own.
type redisServer struct {
	port int
	dir  string
	args []string
	cmd  *exec.Cmd
}

// startRedis starts redis-server on a free loopback port; extra args are
// added to its command line (e.g. "--appendonly", "yes").
func startRedis(t *testing.T, extra ...string) *redisServer {
	t.Helper()
	if os.Getenv(redistest.EnvVar) == "" {
		t.Skip(redistest.EnvVar + " is not set: this test starts and stops its own redis-server processes (on other ports), and runs only where a real Redis is available")
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("%s is set but redis-server is not on PATH: %v", redistest.EnvVar, err)
	}
	r := &redisServer{port: freePort(t), dir: t.TempDir()}
	r.args = append([]string{"--bind", "127.0.0.1", "--port", strconv.Itoa(r.port), "--dir", r.dir, "--save", ""}, extra...)
	r.start(t, bin)
	t.Cleanup(func() { r.kill() })
	return r
}

func (r *redisServer) start(t *testing.T, bin string) {
	t.Helper()
	r.cmd = exec.Command(bin, r.args...)
	if err := r.cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	rdb := goredis.NewClient(&goredis.Options{Addr: r.addr()})
	defer rdb.Close()
	testenv.Eventually(t, 10*time.Second, "redis-server answers", func() bool {
		return rdb.Ping(ctx).Err() == nil
	})
}

// restart kills the server (SIGKILL, no chance to save) and starts it
// again on the same port and directory.
func (r *redisServer) restart(t *testing.T) {
	t.Helper()
	r.kill()
	bin, _ := exec.LookPath("redis-server")
	r.start(t, bin)
}

func (r *redisServer) kill() {
	if r.cmd != nil && r.cmd.Process != nil {
		_ = r.cmd.Process.Signal(syscall.SIGKILL)
		_ = r.cmd.Wait()
		r.cmd = nil
	}
}

func (r *redisServer) addr() string { return "127.0.0.1:" + strconv.Itoa(r.port) }
func (r *redisServer) url() string  { return "redis://" + r.addr() + "/0" }

func (r *redisServer) client(t *testing.T) *goredis.Client {
	rdb := goredis.NewClient(&goredis.Options{Addr: r.addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// testRedisURL is a Redis for serve processes: miniredis in this process
// (the child connects over loopback), or, when IMAGEGEN_TEST_REDIS is
// set, a redis-server process of the test's own (an empty server, so
// no one else's keys are read or touched). passTime(d) lets d pass for
// its TTLs: miniredis's clock only moves when told; a real server's
// moves by itself.
func testRedisURL(t *testing.T) (url string, rdb *goredis.Client, passTime func(time.Duration)) {
	if os.Getenv(redistest.EnvVar) != "" {
		r := startRedis(t)
		return r.url(), r.client(t), func(time.Duration) {}
	}
	mr := miniredis.RunT(t)
	rdb = goredis.NewClient(&goredis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	return "redis://" + mr.Addr() + "/0", rdb, mr.FastForward
}

// proc is an imagegen process of the test's own.
type proc struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	output []byte
	done   chan struct{}
}

// startImagegen runs the binary with args and collects its output.
func startImagegen(t testing.TB, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(imagegenBinary(t), args...), done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), "IMAGEGEN_DEMO_KEY=") // nothing from the environment
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stderr = p.cmd.Stdout
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start imagegen: %v", err)
	}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.mu.Lock()
			p.output = append(append(p.output, sc.Bytes()...), '\n')
			p.mu.Unlock()
		}
	}()
	t.Cleanup(func() { p.signal(syscall.SIGKILL) })
	return p
}

func (p *proc) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return string(p.output)
}

func (p *proc) signal(sig syscall.Signal) {
	if p.cmd.ProcessState == nil {
		_ = p.cmd.Process.Signal(sig)
	}
}

// stop sends SIGTERM and waits for a clean exit.
func (p *proc) stop(t testing.TB) {
	t.Helper()
	p.signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("imagegen did not stop on SIGTERM:\n%s", p.Output())
	}
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("imagegen exited with %v:\n%s", err, p.Output())
	}
}

// kill sends SIGKILL: the process gets no chance to clean up.
func (p *proc) kill() {
	p.signal(syscall.SIGKILL)
	<-p.done
	_ = p.cmd.Wait()
}

var apiLine = regexp.MustCompile(`api=(http://127\.0\.0\.1:\d+)/api/v1`)

// startServeProcess runs `imagegen serve` on a free port and returns its
// base URL.
func startServeProcess(t testing.TB, args ...string) (*proc, string) {
	t.Helper()
	p := startImagegen(t, append([]string{"serve", "-addr", "127.0.0.1:0"}, args...)...)
	var base string
	testenv.Eventually(t, 20*time.Second, "serve prints its address", func() bool {
		if m := apiLine.FindStringSubmatch(p.Output()); m != nil {
			base = m[1]
			return true
		}
		select {
		case <-p.done:
			t.Fatalf("serve exited:\n%s", p.Output())
		default:
		}
		return false
	})
	return p, base
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// An unreachable Redis is one line on stderr, not a page of pool logs.
func TestUnreachableRedisIsOneLine(t *testing.T) {
	is := is.New(t)
	bin := imagegenBinary(t)
	port := freePort(t) // nothing listens there
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "keys", "list", "-redis", "redis://127.0.0.1:"+strconv.Itoa(port)+"/0", "-owner", "a").CombinedOutput()
	is.True(err != nil) // it fails...
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	is.Equal(len(lines), 1) // ...in one line
	is.True(strings.Contains(lines[0], "does not answer"))
}
