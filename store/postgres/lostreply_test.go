package postgres_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
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

// replyCutter cuts, when armed, the connection that sends the next batch
// of successes (completeSQL, recognized by its pg_notify) once committed
// says that batch has committed, before its reply is read: the reply is
// lost as on a network cut after the commit.
type replyCutter struct {
	armed     atomic.Bool
	committed func() bool
}

type cutConn struct {
	net.Conn
	r   *replyCutter
	cut bool
}

func (c *cutConn) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte("pg_notify(")) && c.r.armed.CompareAndSwap(true, false) {
		c.cut = true
	}
	return c.Conn.Write(p)
}

func (c *cutConn) Read(p []byte) (int, error) {
	if c.cut {
		deadline := time.Now().Add(10 * time.Second)
		for !c.r.committed() && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		_ = c.Conn.Close()
		return 0, errors.New("connection cut after the commit")
	}
	return c.Conn.Read(p)
}

// cutterPool is a pool on IMAGEGEN_TEST_POSTGRES whose connections r
// may cut. It sends each statement's text with it (exec mode), so that
// the batch's own round trip is recognized.
func cutterPool(t *testing.T, r *replyCutter) *pgxpool.Pool {
	return wrappedPool(t, pgtest.URL(t), func(c net.Conn) net.Conn { return &cutConn{Conn: c, r: r} })
}

// wrappedPool is a pool on url, configured as a pooler needs
// (postgres.PoolerConfig: each statement's text goes with it), whose
// connections are wrap's of the ones it dials.
func wrappedPool(t *testing.T, url string, wrap func(net.Conn) net.Conn) *pgxpool.Pool {
	t.Helper()
	return wrappedPoolMode(t, url, pgx.QueryExecModeExec, wrap)
}

// wrappedPoolMode is wrappedPool with statements run in mode.
func wrappedPoolMode(t *testing.T, url string, mode pgx.QueryExecMode, wrap func(net.Conn) net.Conn) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.DefaultQueryExecMode = mode
	var d net.Dialer
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return wrap(c), nil
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// A batch of successes whose reply is lost after it committed runs again
// a call at a time, and each call then finds its task a success already:
// that is its own success, answered as done. It was answered
// ErrLeaseLost, on which the worker deletes the image bytes it put in
// Config.Blobs: records of live images without their bytes.
func TestSuccessWhoseReplyWasLostIsNotLeaseLost(t *testing.T) {
	ctx := context.Background()
	other := pgtest.Connect(t)
	cutter := &replyCutter{}
	s := pgtest.NewStore(t, cutterPool(t, cutter), postgres.Config{Retention: time.Hour, SweepInterval: -1})
	schema := pgx.Identifier{s.Schema()}.Sanitize()
	cutter.committed = func() bool {
		var n int
		err := other.QueryRow(ctx, `SELECT count(*) FROM `+schema+`.tasks WHERE id IN ('a', 'b') AND status = 'success'`).Scan(&n)
		return err == nil && n == 2
	}
	if _, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "u", Kind: imagegen.LedgerGrant, Amount: 10, Ref: "g"}); err != nil {
		t.Fatal(err)
	}
	claims := map[string]*imagegen.Task{}
	for _, id := range []string{"blocker", "a", "b"} {
		if _, err := s.CreateTask(ctx, newTask(id, "u"), imagegen.CreateParams{}); err != nil {
			t.Fatal(err)
		}
		c, err := s.ClaimTask(ctx, time.Minute)
		if err != nil || c.ID != id {
			t.Fatalf("claim %s: %v %v", id, c, err)
		}
		claims[id] = c
	}

	// A success held up by a row lock keeps the group commit's one
	// batch in flight, so that the successes of a and b share the next.
	lock, err := other.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lock.Rollback(ctx) }()
	if _, err := lock.Exec(ctx, `SELECT 1 FROM `+schema+`.tasks WHERE id = 'blocker' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	waiting := callsWaiting()
	blockerDone := make(chan error, 1)
	go func() { blockerDone <- s.CompleteTask(ctx, "blocker", claims["blocker"].Attempt, nil, nil) }()
	testenv.EventuallyNoError(t, 10*time.Second, "the blocker's batch to wait for the row lock", func() error {
		if n := callsWaiting() - waiting; n != 1 {
			return fmt.Errorf("%d calls waiting", n)
		}
		var n int
		if err := other.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%' || $1 || '%'`,
			s.Schema()).Scan(&n); err != nil {
			return err
		}
		if n != 1 {
			return fmt.Errorf("%d backends waiting", n)
		}
		return nil
	})
	errs := map[string]error{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, id := range []string{"a", "b"} {
		wg.Go(func() {
			err := s.CompleteTask(ctx, id, claims[id].Attempt, []imagegen.Image{{ID: id + "-img", ContentType: "image/png", Size: 1}}, nil)
			mu.Lock()
			errs[id] = err
			mu.Unlock()
		})
	}
	testenv.EventuallyNoError(t, 10*time.Second, "both successes to wait for the next batch", func() error {
		if n := callsWaiting() - waiting; n != 3 {
			return fmt.Errorf("%d calls waiting", n)
		}
		return nil
	})
	cutter.armed.Store(true)
	if err := lock.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-blockerDone; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if cutter.armed.Load() {
		t.Fatal("no batch of successes was cut")
	}

	for _, id := range []string{"a", "b"} {
		task, err := s.Task(ctx, "u", id)
		if err != nil || task.Status != imagegen.StatusSuccess {
			t.Fatalf("task %s: %+v, %v; want a success", id, task, err)
		}
		if _, err := s.Image(ctx, id+"-img"); err != nil {
			t.Fatalf("image of %s: %v", id, err)
		}
		if errors.Is(errs[id], imagegen.ErrLeaseLost) {
			t.Errorf("success of %s, recorded: %v; want no ErrLeaseLost (its worker deletes the bytes)", id, errs[id])
		}
	}
}
