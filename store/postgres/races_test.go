package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/internal/testenv/pgtest"
	"github.com/imagegen/imagegen/store/postgres"
)

// raceRounds is how many tasks each race of TestFinishRaces runs on.
const raceRounds = 30

// together runs fs at once, released together, and waits for them.
func together(fs ...func()) {
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	for _, f := range fs {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			f()
		}()
	}
	ready.Wait()
	close(start)
	done.Wait()
}

// taskRow is what the races read back of a task and its ledger.
type taskRow struct {
	status             string
	attempt            int
	refunded, leased   bool
	charges, refunds   int
	balance, ledgerSum int64
}

func readTask(t *testing.T, pool *pgxpool.Pool, s *postgres.Store, id string) taskRow {
	t.Helper()
	ctx := context.Background()
	var r taskRow
	schema := pgx.Identifier{s.Schema()}.Sanitize()
	err := pool.QueryRow(ctx, fmt.Sprintf(`SELECT t.status, t.attempt, t.refunded, t.lease_until IS NOT NULL,
			(SELECT count(*) FROM %[1]s.ledger l WHERE l.owner = t.owner AND (l.ref = 'task:' || t.id OR l.ref LIKE 'task:' || t.id || ':%%')),
			(SELECT count(*) FROM %[1]s.ledger l WHERE l.owner = t.owner AND (l.ref = 'refund:' || t.id OR l.ref LIKE 'refund:' || t.id || ':%%')),
			a.balance, (SELECT sum(amount) FROM %[1]s.ledger l WHERE l.owner = t.owner)
		FROM %[1]s.tasks t JOIN %[1]s.accounts a ON a.owner = t.owner WHERE t.id = $1`, schema), id).Scan(
		&r.status, &r.attempt, &r.refunded, &r.leased, &r.charges, &r.refunds, &r.balance, &r.ledgerSum)
	if err != nil {
		t.Fatalf("read %s: %v", id, err)
	}
	if r.balance != r.ledgerSum {
		t.Errorf("%s: balance %d, ledger sum %d", id, r.balance, r.ledgerSum)
	}
	return r
}

// racesStore returns a store on the server's clock with credits for
// owner u.
func racesStore(t *testing.T) (*pgxpool.Pool, *postgres.Store) {
	pool := pgtest.Connect(t)
	s := pgtest.NewStore(t, pool, postgres.Config{Retention: time.Hour, SweepInterval: -1})
	if _, err := s.AddEntry(context.Background(), imagegen.LedgerEntry{Owner: "u", Kind: imagegen.LedgerGrant, Amount: 1000, Ref: "g"}); err != nil {
		t.Fatal(err)
	}
	return pool, s
}

// claimNew creates task id and claims it with lease.
func claimNew(t *testing.T, s *postgres.Store, id string, lease time.Duration) *imagegen.Task {
	t.Helper()
	ctx := context.Background()
	if _, err := s.CreateTask(ctx, newTask(id, "u"), imagegen.CreateParams{}); err != nil {
		t.Fatal(err)
	}
	c, err := s.ClaimTask(ctx, lease)
	if err != nil || c.ID != id {
		t.Fatalf("claim %s: %v %v", id, c, err)
	}
	return c
}

// The owner's cancel and the worker's success of one running task: one
// of them wins, and the task is refunded exactly when the cancel won.
func TestCancelRacesCompletion(t *testing.T) {
	ctx := context.Background()
	pool, s := racesStore(t)
	wins := map[string]int{}
	for i := range raceRounds {
		id := fmt.Sprint("t", i)
		c := claimNew(t, s, id, time.Minute)
		var cancelErr, completeErr error
		var refund int64
		together(
			func() { refund, cancelErr = s.CancelTask(ctx, "u", id, imagegen.CancelParams{}) },
			func() {
				completeErr = s.CompleteTask(ctx, id, c.Attempt, []imagegen.Image{{ID: id + "-img", ContentType: "image/png", Size: 1}}, nil)
			},
		)
		r := readTask(t, pool, s, id)
		switch {
		case cancelErr == nil && errors.Is(completeErr, imagegen.ErrLeaseLost):
			wins["cancel"]++
			if r.status != "failed" || !r.refunded || r.refunds != 1 || refund != 1 {
				t.Errorf("%s: cancel won, but %+v, refund %d", id, r, refund)
			}
			if _, err := s.Image(ctx, id+"-img"); err == nil {
				t.Errorf("%s: the refused success's image is recorded", id)
			}
		case completeErr == nil && errors.Is(cancelErr, imagegen.ErrInvalidTransition):
			wins["complete"]++
			if r.status != "success" || r.refunded || r.refunds != 0 {
				t.Errorf("%s: success won, but %+v", id, r)
			}
		default:
			t.Errorf("%s: cancel %v (refund %d), complete %v: %+v", id, cancelErr, refund, completeErr, r)
		}
		if r.charges != 1 || r.leased {
			t.Errorf("%s: %+v", id, r)
		}
	}
	t.Logf("wins: %v", wins)
}

// Recovery of an expired lease and the late success of its worker: the
// success lands only when recovery left the task alone, and a task
// recovery failed is refunded once.
func TestRecoveryRacesLateCompletion(t *testing.T) {
	ctx := context.Background()
	pool, s := racesStore(t)
	wins := map[string]int{}
	for i := range raceRounds {
		id := fmt.Sprint("t", i)
		c := claimNew(t, s, id, time.Millisecond)
		time.Sleep(3 * time.Millisecond) // the lease has run out
		maxAttempts := 1 + i%2           // fail it, or requeue it
		var rec imagegen.Recovery
		var recErr, completeErr error
		together(
			func() { rec, recErr = s.RecoverExpired(ctx, maxAttempts) },
			func() { completeErr = s.CompleteTask(ctx, id, c.Attempt, nil, nil) },
		)
		if recErr != nil {
			t.Fatal(recErr)
		}
		r := readTask(t, pool, s, id)
		switch {
		case completeErr == nil && rec.Moved() == 0:
			wins["complete"]++
			if r.status != "success" || r.refunds != 0 {
				t.Errorf("%s: success won, but %+v", id, r)
			}
		case errors.Is(completeErr, imagegen.ErrLeaseLost) && rec.Requeued == 1 && maxAttempts == 2:
			wins["requeue"]++
			if r.status != "pending" || r.refunds != 0 {
				t.Errorf("%s: requeued, but %+v", id, r)
			}
		case errors.Is(completeErr, imagegen.ErrLeaseLost) && len(rec.Failed) == 1 && maxAttempts == 1:
			wins["fail"]++
			if r.status != "failed" || !r.refunded || r.refunds != 1 || rec.Failed[0].Refund != 1 {
				t.Errorf("%s: failed by recovery, but %+v, %+v", id, r, rec)
			}
		default:
			t.Errorf("%s: complete %v, recovery %+v: %+v", id, completeErr, rec, r)
		}
		if r.status == "pending" { // out of the way of the next round
			if _, err := s.CancelTask(ctx, "u", id, imagegen.CancelParams{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("wins: %v", wins)
}

// The operator's requeue of a failed task and its owner's cancel: a
// cancel that comes first finds the task failed (and changes nothing);
// one that comes after the requeue ends it again, refunding the
// recharge, if any, once.
func TestRequeueRacesCancel(t *testing.T) {
	ctx := context.Background()
	pool, s := racesStore(t)
	wins := map[string]int{}
	for i := range raceRounds {
		id := fmt.Sprint("t", i)
		c := claimNew(t, s, id, time.Minute)
		if _, err := s.FailTask(ctx, id, c.Attempt, imagegen.Failure{Code: imagegen.CodeInternal, Message: "x"}); err != nil {
			t.Fatal(err)
		}
		recharge := i%2 == 0
		var requeueErr, cancelErr error
		var refund int64
		together(
			func() { requeueErr = s.RequeueTask(ctx, id, recharge) },
			func() { refund, cancelErr = s.CancelTask(ctx, "u", id, imagegen.CancelParams{}) },
		)
		if requeueErr != nil {
			t.Fatalf("%s: requeue: %v", id, requeueErr)
		}
		r := readTask(t, pool, s, id)
		wantCharges := 1
		if recharge {
			wantCharges = 2
		}
		switch {
		case cancelErr == nil:
			wins["cancel after requeue"]++
			wantRefund := int64(0)
			if recharge {
				wantRefund = 1
			}
			if r.status != "failed" || !r.refunded || r.refunds != wantCharges || refund != wantRefund {
				t.Errorf("%s: cancelled after the requeue (recharge %v), but %+v, refund %d", id, recharge, r, refund)
			}
		case errors.Is(cancelErr, imagegen.ErrInvalidTransition):
			wins["cancel before requeue"]++
			if r.status != "pending" || r.refunded != !recharge || r.refunds != 1 {
				t.Errorf("%s: requeued after the cancel (recharge %v), but %+v", id, recharge, r)
			}
			if _, err := s.CancelTask(ctx, "u", id, imagegen.CancelParams{}); err != nil { // out of the way
				t.Fatal(err)
			}
		default:
			t.Errorf("%s: cancel %v: %+v", id, cancelErr, r)
		}
		if r.charges != wantCharges {
			t.Errorf("%s: %d charges, want %d", id, r.charges, wantCharges)
		}
	}
	t.Logf("wins: %v", wins)
}

// callsWaiting counts the goroutines waiting in a group commit's Do for
// their batch.
func callsWaiting() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if (strings.Contains(g, "[select") || strings.Contains(g, "[chan receive")) && strings.Contains(g, "internal/groupcommit.(*Batcher[") && strings.Contains(g, "]).Do(") {
			count++
		}
	}
	return count
}

// A success of a superseded attempt (its lease recovered, the task
// claimed again) that shares a batch of successes with the current
// attempt's is refused like any other stale success: ErrLeaseLost, and
// none of its images recorded. The batch matched the tasks it moved to
// its calls by task id alone, so both calls were told that they had
// completed the task, and the images of both were recorded as the
// task's.
func TestStaleSuccessInTheCurrentOnesBatchIsRefused(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Connect(t)
	clock := imagegentest.NewClock(time.Time{})
	s := pgtest.NewStore(t, pool, postgres.Config{Clock: clock, Retention: time.Hour, SweepInterval: -1})
	_, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "u", Kind: imagegen.LedgerGrant, Amount: 10, Ref: "g"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.CreateTask(ctx, newTask("t", "u"), imagegen.CreateParams{})
	if err != nil {
		t.Fatal(err)
	}
	stale, err := s.ClaimTask(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Minute)
	if rec, err := s.RecoverExpired(ctx, 5); err != nil || rec.Requeued != 1 {
		t.Fatalf("recover: %+v, %v", rec, err)
	}
	current, err := s.ClaimTask(ctx, time.Minute)
	if err != nil || current.ID != "t" || current.Attempt != stale.Attempt+1 {
		t.Fatalf("claim again: %+v, %v", current, err)
	}

	// A success held up by a row lock keeps the group commit's one
	// batch in flight, so that the next two successes wait together for
	// the next batch.
	_, err = s.CreateTask(ctx, newTask("blocker", "u"), imagegen.CreateParams{})
	if err != nil {
		t.Fatal(err)
	}
	blocker, err := s.ClaimTask(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	lock, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lock.Rollback(ctx) }()
	schema := pgx.Identifier{s.Schema()}.Sanitize()
	if _, err := lock.Exec(ctx, `SELECT 1 FROM `+schema+`.tasks WHERE id = 'blocker' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	waiting := callsWaiting()
	blockerDone := make(chan error, 1)
	go func() { blockerDone <- s.CompleteTask(ctx, blocker.ID, blocker.Attempt, nil, nil) }()
	testenv.EventuallyNoError(t, 10*time.Second, "the blocker's batch to wait for the row lock", func() error {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%' || $1 || '%'`,
			s.Schema()).Scan(&n); err != nil {
			return err
		}
		if n != 1 {
			return fmt.Errorf("%d backends waiting", n)
		}
		return nil
	})
	var staleErr, currentErr error
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		staleErr = s.CompleteTask(ctx, "t", stale.Attempt, []imagegen.Image{{ID: "stale-img", ContentType: "image/png", Size: 1}}, nil)
	}()
	go func() {
		defer wg.Done()
		currentErr = s.CompleteTask(ctx, "t", current.Attempt, []imagegen.Image{{ID: "current-img", ContentType: "image/png", Size: 1}}, nil)
	}()
	testenv.EventuallyNoError(t, 10*time.Second, "both successes to wait for the next batch", func() error {
		if n := callsWaiting() - waiting; n != 3 {
			return fmt.Errorf("%d calls waiting", n)
		}
		return nil
	})
	if err := lock.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-blockerDone; err != nil {
		t.Fatal(err)
	}
	wg.Wait()

	if currentErr != nil {
		t.Errorf("current attempt's success: %v", currentErr)
	}
	if !errors.Is(staleErr, imagegen.ErrLeaseLost) {
		t.Errorf("superseded attempt's success: %v, want ErrLeaseLost", staleErr)
	}
	task, err := s.Task(ctx, "u", "t")
	if err != nil {
		t.Fatal(err)
	}
	if task.Status != imagegen.StatusSuccess || !slices.Equal(task.Images, []string{"current-img"}) {
		t.Errorf("task %s with images %v, want success with [current-img]", task.Status, task.Images)
	}
	if _, err := s.Image(ctx, "stale-img"); !errors.Is(err, imagegen.ErrImageNotFound) {
		t.Errorf("the superseded attempt's image: %v, want ErrImageNotFound", err)
	}
}
