package postgres_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/internal/testenv/pgtest"
	"github.com/imagegen/imagegen/store/postgres"
)

// submitGate holds up, when armed, the first read of the connection
// that sends the next batch of submits (recognized by submit_tasks),
// until open is closed; with cut, that read fails instead, as on a
// connection cut before any answer came back. The pool's cancel
// requests (which pgx sends, best effort, on a connection of their own
// when a statement's deadline passes) never reach the server, as when a
// load balancer sends them to another pooler, or the network that lost
// the answer loses them too: the backend goes on with the batch.
type submitGate struct {
	armed atomic.Bool
	open  chan struct{}
	cut   bool
}

type gatedConn struct {
	net.Conn
	g     *submitGate
	gated bool
}

// cancelRequestCode opens a CancelRequest (16 bytes: length, code, pid,
// key).
var cancelRequestCode = []byte{0, 0, 0, 16, 0x04, 0xd2, 0x16, 0x2e}

func (c *gatedConn) Write(p []byte) (int, error) {
	if len(p) == 16 && bytes.HasPrefix(p, cancelRequestCode) {
		_ = c.Conn.Close() // lost on the way
		return len(p), nil
	}
	if runsSubmitTasks(p) && c.g.armed.CompareAndSwap(true, false) {
		c.gated = true
	}
	return c.Conn.Write(p)
}

func (c *gatedConn) Read(p []byte) (int, error) {
	if c.gated {
		c.gated = false
		<-c.g.open
		if c.g.cut {
			_ = c.Conn.Close()
			return 0, errors.New("connection cut before the answer")
		}
	}
	return c.Conn.Read(p)
}

// runsSubmitTasks reports whether p, frontend messages that a client
// writes at once, runs submit_tasks: an Execute ('E') in a write that
// names it, by its text (a statement sent with its text, as behind a
// pooler) or by its prepared statement's name (Bind). Preparing the
// statement (Parse, Describe, Sync) is not running it.
func runsSubmitTasks(p []byte) bool {
	if !bytes.Contains(p, []byte("submit_tasks")) {
		return false
	}
	for len(p) >= 5 {
		if p[0] == 'E' {
			return true
		}
		n := 1 + int(binary.BigEndian.Uint32(p[1:5]))
		if n < 5 || n > len(p) {
			return false
		}
		p = p[n:]
	}
	return false
}

// execModes are the two ways the store sends a batch: on a pool in pgx's
// default mode, prepared once a connection; in exec mode (behind a
// pooler), with its statements' text each time.
var execModes = map[string]pgx.QueryExecMode{"prepared": pgx.QueryExecModeCacheStatement, "exec": pgx.QueryExecModeExec}

// inEachMode runs test once for each of execModes, as a subtest.
func inEachMode(t *testing.T, test func(*testing.T, pgx.QueryExecMode)) {
	for name, mode := range execModes {
		t.Run(name, func(t *testing.T) { test(t, mode) })
	}
}

// gatedStore is a store on a fresh schema whose pool (on url: the
// server, or PgBouncer in front of it; in mode) g may hold up, with
// direct the server's own pool (migrations, and LISTEN for a pool in
// exec mode, as behind a pooler).
func gatedStore(t *testing.T, url string, mode pgx.QueryExecMode, direct *pgxpool.Pool, g *submitGate) *postgres.Store {
	t.Helper()
	return modeStore(t, wrappedPoolMode(t, url, mode, func(c net.Conn) net.Conn { return &gatedConn{Conn: c, g: g} }), direct)
}

// modeStore is a store on a fresh schema on pool, LISTENing on direct
// when pool is in exec mode.
func modeStore(t *testing.T, pool, direct *pgxpool.Pool) *postgres.Store {
	t.Helper()
	cfg := postgres.Config{Schema: pgtest.MigratedSchema(t, direct)}
	if pool.Config().ConnConfig.DefaultQueryExecMode == pgx.QueryExecModeExec {
		cfg.ListenConfig = direct.Config().ConnConfig
	}
	s, err := postgres.New(pool, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// lockAccount holds owner's account row in a transaction of direct's,
// as a host app's transaction (SubmitTx, GrantTx) does, until release.
func lockAccount(t *testing.T, direct *pgxpool.Pool, s *postgres.Store, owner string) (release func()) {
	t.Helper()
	ctx := context.Background()
	tx, err := direct.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(ctx) })
	if _, err := tx.Exec(ctx, `SELECT 1 FROM `+pgx.Identifier{s.Schema()}.Sanitize()+`.accounts WHERE owner = $1 FOR UPDATE`, owner); err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// submitsRunning counts the backends that run a batch of submits on s's
// schema, and those of them that wait for a lock.
func submitsRunning(ctx context.Context, direct *pgxpool.Pool, s *postgres.Store) (running, waiting int, err error) {
	err = direct.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE wait_event_type = 'Lock') FROM pg_stat_activity
		WHERE state <> 'idle' AND query LIKE '%submit_tasks(%' AND query LIKE '%' || $1 || '%' AND pid <> pg_backend_pid()`,
		s.Schema()).Scan(&running, &waiting)
	return running, waiting, err
}

// An idempotent submit whose batch passes its timeout while the server
// still holds it (waiting for the owner's account row, which a host
// app's transaction holds, as it might wait for its commit) is answered
// an error, and its retry with the same key never charges a second time.
// The batch's backend went on with it after the client gave up; the
// service looked for the task at once, found nothing, and gave the key
// up, so once the row was free the first batch committed its task and
// the retry made and charged another. The store now settles the batch
// before it answers (it cancels the backend's statement and waits for
// its transaction to end, or says the outcome is unknown, keeping the
// key), through PgBouncer in transaction mode too.
func TestIdempotentSubmitWhoseBatchTimedOutChargesOnce(t *testing.T) {
	for _, through := range []string{"server/prepared", "server/exec", "pgbouncer"} {
		t.Run(through, func(t *testing.T) {
			ctx := context.Background()
			direct := pgtest.Connect(t)
			url, mode := pgtest.URL(t), pgx.QueryExecModeCacheStatement
			switch through {
			case "server/exec":
				mode = pgx.QueryExecModeExec
			case "pgbouncer":
				url, mode = pgtest.PgBouncer(t), pgx.QueryExecModeExec
			}
			g := &submitGate{open: make(chan struct{})}
			s := gatedStore(t, url, mode, direct, g)
			s.SetCreateTimeoutForTest(time.Second)
			svc := newService(t, s, imagegen.Config{})
			if _, err := svc.Grant(ctx, "alice", 10, "g"); err != nil {
				t.Fatal(err)
			}
			release := lockAccount(t, direct, s, "alice")
			once := imagegen.Idempotency{Key: "order-1", Fingerprint: "body"}
			req := func() (imagegen.Request, error) { return prompt, nil }

			g.armed.Store(true)
			first := make(chan error, 1)
			go func() {
				_, _, err := svc.SubmitIdempotent(ctx, "alice", once, req)
				first <- err
			}()
			testenv.EventuallyNoError(t, 10*time.Second, "the batch to wait for the account row", func() error {
				if _, waiting, err := submitsRunning(ctx, direct, s); err != nil || waiting != 1 {
					return fmt.Errorf("%d batches waiting (%v)", waiting, err)
				}
				return nil
			})
			close(g.open) // its timeout passes while it waits
			err := <-first
			t.Logf("first: %v", err)
			if err == nil {
				t.Fatal("the submit whose batch timed out answered no error")
			}
			release()
			testenv.EventuallyNoError(t, 10*time.Second, "the first batch's transaction to end", func() error {
				if running, _, err := submitsRunning(ctx, direct, s); err != nil || running != 0 {
					return fmt.Errorf("%d batches running (%v)", running, err)
				}
				return nil
			})

			sub, _, err := svc.SubmitIdempotent(ctx, "alice", once, req)
			if err != nil && !errors.Is(err, imagegen.ErrIdempotencyKeyInUse) {
				t.Fatalf("retry: %v; want a submission, or the key in use while the first outcome is unknown", err)
			}
			list, err := svc.ListTasks(ctx, "alice", "", 10, "")
			if err != nil {
				t.Fatal(err)
			}
			bal, err := svc.Balance(ctx, "alice")
			if err != nil {
				t.Fatal(err)
			}
			if len(list.Tasks) > 1 || bal != 10-2*int64(len(list.Tasks)) {
				t.Fatalf("%d tasks, balance %d: the key's submit was charged more than once", len(list.Tasks), bal)
			}
			if sub.TaskID != "" && (len(list.Tasks) != 1 || list.Tasks[0].ID != sub.TaskID) {
				t.Fatalf("retry answered task %s; alice has %v", sub.TaskID, list.Tasks)
			}
		})
	}
}

// A batch whose connection is cut before any answer came back (its
// transaction unknown to the client) may still commit: its error wraps
// imagegen.ErrOutcomeUnknown, and the task indeed comes to exist once
// the row it waited for is free.
func TestSubmitCutBeforeAnyAnswerIsOfUnknownOutcome(t *testing.T) {
	inEachMode(t, submitCutBeforeAnyAnswer)
}

func submitCutBeforeAnyAnswer(t *testing.T, mode pgx.QueryExecMode) {
	ctx := context.Background()
	direct := pgtest.Connect(t)
	g := &submitGate{open: make(chan struct{}), cut: true}
	s := gatedStore(t, pgtest.URL(t), mode, direct, g)
	if _, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "u", Kind: imagegen.LedgerGrant, Amount: 10, Ref: "g"}); err != nil {
		t.Fatal(err)
	}
	release := lockAccount(t, direct, s, "u")
	g.armed.Store(true)
	done := make(chan error, 1)
	go func() {
		_, err := s.CreateTask(ctx, newTask("t1", "u"), imagegen.CreateParams{})
		done <- err
	}()
	testenv.EventuallyNoError(t, 10*time.Second, "the batch to wait for the account row", func() error {
		if _, waiting, err := submitsRunning(ctx, direct, s); err != nil || waiting != 1 {
			return fmt.Errorf("%d batches waiting (%v)", waiting, err)
		}
		return nil
	})
	close(g.open)
	if err := <-done; !errors.Is(err, imagegen.ErrOutcomeUnknown) {
		t.Fatalf("CreateTask cut before any answer: %v; want ErrOutcomeUnknown", err)
	}
	release()
	testenv.EventuallyNoError(t, 10*time.Second, "the task the cut batch made", func() error {
		_, err := s.Task(ctx, "u", "t1")
		return err
	})
}

// A batch that timed out is settled on a pool of one connection too:
// its connection, which the timeout broke (pgx closes it, and its cancel
// request ends the backend's statement), goes back to the pool before
// the settling asks the pool for one. The settling held it while it
// waited for another, so on a pool of one it could never run: it waited
// its whole bound (10 s) and answered ErrOutcomeUnknown for a batch that
// had not committed (and on any pool it took a second slot while
// holding one, behind every other caller waiting for a connection).
func TestBatchTimedOutIsSettledOnAPoolOfOneConnection(t *testing.T) {
	inEachMode(t, batchTimedOutOnAPoolOfOne)
}

func batchTimedOutOnAPoolOfOne(t *testing.T, mode pgx.QueryExecMode) {
	ctx := context.Background()
	direct := pgtest.Connect(t)
	s := modeStore(t, wrappedPoolMode(t, poolOfOneURL(t), mode, func(c net.Conn) net.Conn { return c }), direct)
	s.SetCreateTimeoutForTest(time.Second)
	if _, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "u", Kind: imagegen.LedgerGrant, Amount: 10, Ref: "g"}); err != nil {
		t.Fatal(err)
	}
	release := lockAccount(t, direct, s, "u")
	_, err := s.CreateTask(ctx, newTask("t1", "u"), imagegen.CreateParams{}) // waits for the row past its timeout
	release()
	t.Logf("CreateTask: %v", err)
	if err == nil || errors.Is(err, imagegen.ErrOutcomeUnknown) {
		t.Fatalf("CreateTask whose batch timed out on a pool of one connection: %v; want the batch settled as not committed", err)
	}
	if _, err := s.Task(ctx, "u", "t1"); !errors.Is(err, imagegen.ErrTaskNotFound) {
		t.Fatalf("the task of a batch settled as not committed: %v; want ErrTaskNotFound", err)
	}
}

// poolOfOneURL is IMAGEGEN_TEST_POSTGRES for a pool of one connection.
func poolOfOneURL(t *testing.T) string {
	url := pgtest.URL(t)
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return url + sep + "pool_max_conns=1"
}
