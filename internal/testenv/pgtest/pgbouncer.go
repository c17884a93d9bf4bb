package pgtest

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/store/postgres"
)

// PgBouncerEnvVar names the pgbouncer binary (Debian package pgbouncer)
// that the transaction-pooler tests start; .ci/run sets it.
const PgBouncerEnvVar = "IMAGEGEN_TEST_PGBOUNCER"

// PgBouncer starts PgBouncer in transaction mode on a free loopback port
// in front of IMAGEGEN_TEST_POSTGRES, stopped (by its PID) when the test
// ends, and returns its URL: the same user and database, through the
// pooler. It skips the test unless both IMAGEGEN_TEST_POSTGRES and
// IMAGEGEN_TEST_PGBOUNCER are set. PgBouncer refuses to run as root: a
// test running as root starts it as the postgres user.
func PgBouncer(t testing.TB) string {
	t.Helper()
	return StartPgBouncer(t).URL
}

// Bouncer is a PgBouncer that a test started (StartPgBouncer), which it
// may restart on the same port.
type Bouncer struct {
	// URL reaches the database through the pooler.
	URL string

	t    testing.TB
	bin  string
	dir  string // holds pgbouncer.ini
	addr string // loopback host:port

	mu   sync.Mutex
	proc *bouncerProc // the running one; nil while stopped
}

// bouncerProc is one run of PgBouncer.
type bouncerProc struct {
	cmd    *exec.Cmd
	out    *lockedBuffer
	exited chan struct{}
}

// StartPgBouncer is PgBouncer that returns the running pooler, so that
// the test can also stop and restart it (Restart), as an operator does.
func StartPgBouncer(t testing.TB) *Bouncer {
	t.Helper()
	direct := URL(t)
	bin := os.Getenv(PgBouncerEnvVar)
	if bin == "" {
		t.Skip(PgBouncerEnvVar + " is not set (e.g. /usr/sbin/pgbouncer, Debian package pgbouncer); the transaction-pooler tests need it")
	}
	cfg, err := pgx.ParseConfig(direct)
	if err != nil {
		t.Fatalf("%s: %v", EnvVar, err)
	}
	dir, err := os.MkdirTemp("", "imagegen-pgbouncer-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	port := freePort(t)
	ini := fmt.Sprintf(`[databases]
* = host=%s port=%d

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = transaction
default_pool_size = 10
max_client_conn = 200
ignore_startup_parameters = extra_float_digits
`, cfg.Host, cfg.Port, port, filepath.Join(dir, "users.txt"))
	users := fmt.Sprintf("%q \"\"\n", cfg.User)
	for name, body := range map[string]string{"pgbouncer.ini": ini, "users.txt": users} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The directory is readable by the user PgBouncer runs as.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	u := url.URL{Scheme: "postgres", User: url.User(cfg.User), Host: addr, Path: "/" + cfg.Database, RawQuery: "sslmode=disable"}
	b := &Bouncer{URL: u.String(), t: t, bin: bin, dir: dir, addr: addr}
	t.Cleanup(b.stop)
	b.start()
	return b
}

// Restart kills PgBouncer (SIGKILL: every client and server connection
// closes at once, open transactions included, as in a crash of the
// pooler or of its host) and starts it again on the same port. It
// returns once the new one listens.
func (b *Bouncer) Restart() {
	b.t.Helper()
	b.stopWith(syscall.SIGKILL)
	b.start()
}

// start runs PgBouncer and waits until it listens.
func (b *Bouncer) start() {
	t := b.t
	t.Helper()
	cmd := exec.Command(b.bin, filepath.Join(b.dir, "pgbouncer.ini"))
	p := &bouncerProc{cmd: cmd, out: &lockedBuffer{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: credentialOf(t, "postgres")}
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", b.bin, err)
	}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	b.mu.Lock()
	b.proc = p
	b.mu.Unlock()
	testenv.EventuallyNoError(t, 10*time.Second, "pgbouncer to listen on "+b.addr, func() error {
		c, err := net.DialTimeout("tcp", b.addr, time.Second)
		if err == nil {
			return c.Close()
		}
		select {
		case <-p.exited:
			t.Fatalf("pgbouncer exited at start:\n%s", p.out.String())
		default:
		}
		return fmt.Errorf("%w; pgbouncer's output:\n%s", err, p.out.String())
	})
}

// stop ends the running PgBouncer, if any, by its PID: SIGTERM
// (immediate shutdown), then SIGKILL after 5 s.
func (b *Bouncer) stop() { b.stopWith(syscall.SIGTERM) }

// stopWith ends the running PgBouncer, if any, with sig, then SIGKILL
// after 5 s.
func (b *Bouncer) stopWith(sig syscall.Signal) {
	b.mu.Lock()
	p := b.proc
	b.proc = nil
	b.mu.Unlock()
	if p == nil {
		return
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
	if b.t.Failed() {
		b.t.Logf("pgbouncer output:\n%s", p.out.String())
	}
}

// Pooled is a store's view of PostgreSQL behind PgBouncer: Pool goes
// through the pooler (no named prepared statements), Direct reaches the
// server itself (migrations, schema drops), and Listen is the direct
// connection for the store's LISTEN.
type Pooled struct {
	Bouncer *Bouncer
	Pool    *pgxpool.Pool
	Direct  *pgxpool.Pool
	Listen  *pgx.ConnConfig
}

// ConnectPooled starts PgBouncer (PgBouncer) and returns pools through it
// and around it, closed when the test ends; it skips like PgBouncer.
func ConnectPooled(t testing.TB) Pooled {
	t.Helper()
	bouncer := StartPgBouncer(t)
	direct := Connect(t)
	cfg, err := pgxpool.ParseConfig(bouncer.URL)
	if err != nil {
		t.Fatal(err)
	}
	postgres.PoolerConfig(cfg)
	cfg.MaxConns = max(cfg.MaxConns, 8)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := pool.Ping(ctx); err != nil {
		t.Fatalf("pgbouncer does not answer: %v", err)
	}
	return Pooled{Bouncer: bouncer, Pool: pool, Direct: direct, Listen: direct.Config().ConnConfig}
}

// NewStore returns a store with cfg through the pooler, on a fresh schema
// migrated over the direct connection, listening on the direct one.
func (p Pooled) NewStore(t testing.TB, cfg postgres.Config) *postgres.Store {
	t.Helper()
	cfg.Schema = MigratedSchema(t, p.Direct)
	cfg.ListenConfig = p.Listen
	s, err := postgres.New(p.Pool, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// credentialOf is the uid and gid of the named system user.
func credentialOf(t testing.TB, name string) *syscall.Credential {
	t.Helper()
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatalf("pgbouncer cannot run as root and there is no %s user: %v", name, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		t.Fatalf("user %s: uid %q gid %q", name, u.Uid, u.Gid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
}

// lockedBuffer collects a process's output from its copying goroutines.
type lockedBuffer = testenv.SyncBuffer
