package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/internal/testenv/pgtest"
	"github.com/imagegen/imagegen/store/postgres"
)

func newTask(id, owner string) *imagegen.Task {
	return &imagegen.Task{ID: id, Owner: owner, Cost: 1, Model: "m",
		Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p"}}
}

// Sweep removes expired tasks, images, idempotency records and sessions
// in batches, and nothing that is still live.
func TestSweepRemovesExpiredRowsInBatches(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	pool := pgtest.Connect(t)
	clock := imagegentest.NewClock(time.Time{})
	s := pgtest.NewStore(t, pool, postgres.Config{Clock: clock, Retention: retention, SweepBatch: 3, SweepInterval: -1})
	const n = 10
	_, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "u", Kind: imagegen.LedgerGrant, Amount: n + 1, Ref: "g"})
	is.NoErr(err)
	for i := range n {
		_, err := s.CreateTask(ctx, newTask(fmt.Sprintf("t%d", i), "u"), imagegen.CreateParams{})
		is.NoErr(err)
		c, err := s.ClaimTask(ctx, time.Minute)
		is.NoErr(err)
		is.NoErr(s.CompleteTask(ctx, c.ID, c.Attempt, []imagegen.Image{{ID: c.ID + "-img", ContentType: "image/png", Size: 1}}, nil))
	}
	_, err = s.CreateTask(ctx, newTask("waiting", "u"), imagegen.CreateParams{})
	is.NoErr(err)
	_, err = s.BeginIdempotent(ctx, "u", "k", "fp", "", time.Minute, time.Hour)
	is.NoErr(err)
	_, err = s.PutSession(ctx, imagegen.Session{ID: "sess", Owner: "u"}, time.Minute)
	is.NoErr(err)

	count := func(table string) int {
		var c int
		is.NoErr(pool.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM %q.%s`, s.Schema(), table)).Scan(&c))
		return c
	}
	swept, err := s.Sweep(ctx)
	is.NoErr(err)
	is.Equal(swept, postgres.Swept{}) // nothing has expired yet

	clock.Advance(retention)
	swept, err = s.Sweep(ctx)
	is.NoErr(err)
	is.Equal(swept, postgres.Swept{Tasks: n, Images: n, IdempotencyRecords: 1, Sessions: 1})
	is.Equal(count("tasks"), 1) // the pending one stays
	is.Equal(count("images"), 0)
	is.Equal(count("idempotency"), 0)
	is.Equal(count("sessions"), 0)
	is.Equal(count("ledger"), n+2) // the ledger is kept whole
	_, err = s.Task(ctx, "u", "waiting")
	is.NoErr(err)
}

// A task finished through one store (process) wakes a watcher on
// another, and a submit there wakes the other's idle workers.
func TestNotificationsAcrossStores(t *testing.T) {
	is := is.New(t)
	pool := pgtest.Connect(t)
	a := pgtest.NewStore(t, pool, postgres.Config{})
	b, err := postgres.New(pool, postgres.Config{Schema: a.Schema()})
	is.NoErr(err)
	defer b.Close()

	crossStoreNotifications(t, a, b)
}

// crossStoreNotifications checks that a submit through a wakes b's idle
// workers and that a finish through a wakes a watcher on b.
func crossStoreNotifications(t *testing.T, a, b *postgres.Store) {
	is := is.New(t)
	ctx := context.Background()
	work := b.WorkReady()
	_, err := a.AddEntry(ctx, imagegen.LedgerEntry{Owner: "u", Kind: imagegen.LedgerGrant, Amount: 2, Ref: "g"})
	is.NoErr(err)
	finished, stop, err := b.WatchTask(ctx, "t1")
	is.NoErr(err)
	defer stop()
	other, stopOther, err := b.WatchTask(ctx, "nobody")
	is.NoErr(err)
	defer stopOther()
	received(work) // the listener's start may have signalled once (before the watches were ready)
	_, err = a.CreateTask(ctx, newTask("t1", "u"), imagegen.CreateParams{})
	is.NoErr(err)
	select {
	case <-work:
	case <-time.After(time.Minute):
		t.Fatal("idle workers on the other store were not told of the submit")
	}
	is.True(finishAndWake(t, a, finished, other, "the watcher on the other store was not woken")) // nothing woke every watcher
}

// finishAndWake claims the task s has ready and completes it, checking
// that the watcher's channel finished stays open until then and closes
// after; why says what it means when it does not close. other is a watch
// on a task that does not finish: when it is still open once finished
// has closed, finished was closed by the finish's notification, and
// finishAndWake reports true. It reports false when every watcher was
// woken meanwhile (as a listener does when it reconnects): then the
// wake-up proves nothing.
func finishAndWake(t *testing.T, s *postgres.Store, finished, other <-chan struct{}, why string) bool {
	t.Helper()
	ctx := context.Background()
	c, err := s.ClaimTask(ctx, time.Minute)
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	select {
	case <-finished:
		// Only a wake-up of every watcher may come this early; it closes
		// the channels one after another, so other may be a moment late.
		select {
		case <-other:
		case <-time.After(time.Second):
			t.Fatal("woken before the task finished")
		}
	case <-time.After(50 * time.Millisecond): // a bug's chance to show; it cannot fail the test otherwise
	}
	if err := s.CompleteTask(ctx, c.ID, c.Attempt, nil, nil); err != nil {
		t.Fatalf("complete: %v", err)
	}
	select {
	case <-finished:
	case <-time.After(time.Minute):
		t.Fatal(why)
	}
	return !received(other)
}

// received reports whether ch is closed or holds a signal (taking it),
// without waiting.
func received(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// When the listening connection is killed, watchers are woken (they
// re-read their task), and notifications work again without a restart.
func TestListenerSurvivesTerminatedConnection(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	pool := pgtest.Connect(t)
	s := pgtest.NewStore(t, pool, postgres.Config{})
	_, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "u", Kind: imagegen.LedgerGrant, Amount: 2, Ref: "g"})
	is.NoErr(err)
	early, stopEarly, err := s.WatchTask(ctx, "t1")
	is.NoErr(err)
	defer stopEarly()

	var killed int
	is.NoErr(pool.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE query LIKE 'LISTEN "' || $1 || '.%'`, s.Schema()).Scan(&killed))
	is.Equal(killed, 1)
	select {
	case <-early: // spurious wake-up: the watcher re-reads its task
	case <-time.After(5 * time.Second):
		t.Fatal("watchers were not woken when the listener died")
	}

	// Once it is back (a new LISTEN backend), a finish is announced
	// again: nothing else wakes a watcher while the connection is up.
	testenv.EventuallyNoError(t, 10*time.Second, "the listener to LISTEN again", func() error {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE query LIKE 'LISTEN "' || $1 || '.%' AND state = 'idle'`, s.Schema()).Scan(&n); err != nil {
			return err
		}
		if n != 1 {
			return fmt.Errorf("%d idle LISTEN backends", n)
		}
		return nil
	})
	// The reconnected listener wakes every watcher once (anything may
	// have finished while nobody listened), maybe after the watches
	// below were taken: then they are taken again, for another task.
	for i := 1; ; i++ {
		id := fmt.Sprint("t", i)
		finished, stop, err := s.WatchTask(ctx, id)
		is.NoErr(err)
		other, stopOther, err := s.WatchTask(ctx, "nobody")
		is.NoErr(err)
		_, err = s.CreateTask(ctx, newTask(id, "u"), imagegen.CreateParams{})
		is.NoErr(err)
		notified := finishAndWake(t, s, finished, other, "no wake-up after the listener came back")
		stop()
		stopOther()
		if notified {
			break
		}
		is.True(i < 2) // every watcher was woken once, not again
	}
}
