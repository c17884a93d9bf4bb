package storetest

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/store/storekit"
)

func testFencing(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	task, c := startTask(t, s, "u", 1)
	stale := c.Attempt + 1
	is.True(errors.Is(errOf(s.FailTask(ctx, task.ID, stale, fail("x"))), imagegen.ErrLeaseLost))
	is.True(errors.Is(s.CompleteTask(ctx, task.ID, stale, nil, nil), imagegen.ErrLeaseLost))
	is.True(errors.Is(s.RetryTask(ctx, task.ID, stale, 0, "x"), imagegen.ErrLeaseLost))
	is.True(errors.Is(s.RenewLease(ctx, task.ID, stale, lease), imagegen.ErrLeaseLost))
	is.True(errors.Is(s.RenewLease(ctx, "no-such-task", 1, lease), imagegen.ErrLeaseLost))

	is.NoErr(s.CompleteTask(ctx, task.ID, c.Attempt, []imagegen.Image{image(task.ID + "-img")}, nil))
	done := get(t, s, "u", task.ID)
	is.Equal(done.Status, imagegen.StatusSuccess)
	is.Equal(done.Images, []string{task.ID + "-img"})
	is.True(!done.FinishedAt.IsZero())

	// The holder itself cannot finish twice, nor fail a success.
	is.True(errors.Is(s.CompleteTask(ctx, task.ID, c.Attempt, nil, nil), imagegen.ErrLeaseLost))
	is.True(errors.Is(errOf(s.FailTask(ctx, task.ID, c.Attempt, fail("late"))), imagegen.ErrLeaseLost))
	is.True(errors.Is(s.RetryTask(ctx, task.ID, c.Attempt, 0, "late"), imagegen.ErrLeaseLost))
	is.True(errors.Is(s.RenewLease(ctx, task.ID, c.Attempt, lease), imagegen.ErrLeaseLost))
	is.True(errors.Is(errOf(s.CancelTask(ctx, "u", task.ID, imagegen.CancelParams{})), imagegen.ErrInvalidTransition))
	after := get(t, s, "u", task.ID)
	is.Equal(after.Status, imagegen.StatusSuccess)
	is.Equal(after.Error, "")
	is.Equal(balance(t, s, "u"), int64(0)) // a success is not refunded
}

func testLeaseExpiry(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	task, first := startTask(t, s, "u", 1)
	h.Advance(lease / 2)
	is.Equal(recoverNow(t, s, 3).Moved(), 0)
	_, err := s.ClaimTask(ctx, lease)
	is.True(errors.Is(err, imagegen.ErrNoTask)) // still leased
	h.Advance(lease / 2)
	rec := recoverNow(t, s, 3)
	is.Equal(rec.Requeued, 1)
	is.Equal(len(rec.Failed), 0)
	back := get(t, s, "u", task.ID)
	is.Equal(back.Status, imagegen.StatusPending)
	is.Equal(back.Attempt, 1)

	second := claim(t, s)
	is.Equal(second.ID, task.ID)
	is.Equal(second.Attempt, 2)
	// The first worker wakes up: its token is stale.
	is.True(errors.Is(s.CompleteTask(ctx, task.ID, first.Attempt, []imagegen.Image{image(task.ID + "-late")}, nil), imagegen.ErrLeaseLost))
	is.NoErr(s.CompleteTask(ctx, task.ID, second.Attempt, []imagegen.Image{image(task.ID + "-img")}, nil))
	done := get(t, s, "u", task.ID)
	is.Equal(done.Status, imagegen.StatusSuccess)
	is.Equal(done.Images, []string{task.ID + "-img"})
	_, err = s.Image(ctx, "late")
	is.True(errors.Is(err, imagegen.ErrImageNotFound))
	is.Equal(balance(t, s, "u"), int64(0))
}

func testLeaseRenewal(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	task, c := startTask(t, s, "u", 1)
	for i := 0; i < 3; i++ {
		h.Advance(lease * 8 / 10)
		is.NoErr(s.RenewLease(ctx, task.ID, c.Attempt, lease))
		is.Equal(recoverNow(t, s, 3).Moved(), 0)
	}
	is.Equal(get(t, s, "u", task.ID).Status, imagegen.StatusProcessing)
	is.Equal(recoverAfterLease(t, h, 3).Moved(), 1)
}

func testMaxAttempts(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	task := submitFunded(t, s, "u", 2)
	var rec imagegen.Recovery
	for attempt := 1; attempt <= 2; attempt++ {
		c := claim(t, s)
		is.Equal(c.Attempt, attempt)
		rec = recoverAfterLease(t, h, 2)
		is.Equal(rec.Moved(), 1)
	}
	is.Equal(rec.Requeued, 0) // the last recovery failed it, and says so
	is.Equal(len(rec.Failed), 1)
	is.Equal(rec.Failed[0].ID, task.ID)
	is.Equal(rec.Failed[0].Refund, int64(2))
	failed := getFailed(t, s, "u", task.ID, imagegen.CodeInternal)
	is.True(failed.Refunded)
	is.Equal(balance(t, s, "u"), int64(2))
	is.Equal(countRefs(checkLedger(t, s, "u"), "refund:"+task.ID), 1)
	_, err := s.ClaimTask(ctx, lease)
	is.True(errors.Is(err, imagegen.ErrNoTask))
}

func testRetry(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	task, c := startTask(t, s, "u", 1)
	is.NoErr(s.RetryTask(ctx, task.ID, c.Attempt, lease, "503 from provider"))
	back := get(t, s, "u", task.ID)
	is.Equal(back.Status, imagegen.StatusPending)
	is.Equal(back.LastError, "503 from provider")
	is.Equal(back.Error, "") // not shown to the user
	_, err := s.ClaimTask(ctx, lease)
	is.True(errors.Is(err, imagegen.ErrNoTask)) // not before its delay
	h.Advance(lease)
	again := claim(t, s)
	is.Equal(again.ID, task.ID)
	is.Equal(again.Attempt, 2)
	is.True(errors.Is(s.CompleteTask(ctx, task.ID, c.Attempt, nil, nil), imagegen.ErrLeaseLost))
	is.Equal(balance(t, s, "u"), int64(0))
}

// testRelease: a task given back at shutdown is ready again at once and
// its claim does not count against maxAttempts (Attempt - Released), while
// the fencing token still grows.
func testRelease(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	task, first := startTask(t, s, "u", 1)
	is.True(errors.Is(s.ReleaseTask(ctx, task.ID, first.Attempt+1), imagegen.ErrLeaseLost)) // fenced
	is.NoErr(s.ReleaseTask(ctx, task.ID, first.Attempt))
	is.True(errors.Is(s.ReleaseTask(ctx, task.ID, first.Attempt), imagegen.ErrLeaseLost)) // not twice
	back := get(t, s, "u", task.ID)
	is.Equal(back.Status, imagegen.StatusPending)
	is.Equal(back.Released, 1)
	is.True(back.LastError != "")

	second := claim(t, s) // ready at once
	is.Equal(second.ID, task.ID)
	is.Equal(second.Attempt, 2) // the fencing token still grows
	is.Equal(second.Released, 1)
	is.True(errors.Is(s.CompleteTask(ctx, task.ID, first.Attempt, nil, nil), imagegen.ErrLeaseLost))

	// With one attempt allowed, the released claim did not use it up: an
	// expired lease now is the task's first counted attempt, so it is
	// requeued rather than failed.
	rec := recoverAfterLease(t, h, 2)
	is.Equal(rec.Requeued, 1)
	is.Equal(len(rec.Failed), 0)
	is.Equal(get(t, s, "u", task.ID).Status, imagegen.StatusPending)
	third := claim(t, s)
	is.Equal(third.Attempt, 3)
	rec = recoverAfterLease(t, h, 2) // 3 claims, 1 released: 2 counted
	is.Equal(rec.Requeued, 0)
	is.Equal(len(rec.Failed), 1)
	is.Equal(rec.Failed[0].Attempts, 2)
	is.True(getFailed(t, s, "u", task.ID, imagegen.CodeInternal).Refunded)
	is.Equal(balance(t, s, "u"), int64(1))
}

// testRecoveryReport checks what RecoverExpired reports: how many tasks
// it requeued, and for each task it failed, what the service counts and
// logs (id, owner, model, request id, attempts, cost, refund).
func testRecoveryReport(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	grant(t, s, "u", 10)
	grant(t, s, "v", 10)
	a := newTask("u", 2)
	a.Model, a.RequestID = "model-a", "req-a"
	create(t, s, a)
	b := newTask("v", 3)
	b.Model = "model-b" // no request id
	create(t, s, b)

	// First expiry: both requeued, nothing failed.
	claim(t, s)
	claim(t, s)
	rec := recoverAfterLease(t, h, 2)
	is.Equal(rec.Requeued, 2)
	is.Equal(len(rec.Failed), 0)

	// Second expiry: a and b have used their attempts and fail; c, on
	// its first attempt, is requeued in the same call.
	c := submit(t, s, "u", 1)
	for range 3 {
		claim(t, s)
	}
	rec = recoverAfterLease(t, h, 2)
	is.Equal(rec.Requeued, 1)
	is.Equal(rec.Moved(), 3)
	failed := byID(rec.Failed)
	is.Equal(failed, byID([]imagegen.ExpiredTask{
		{ID: a.ID, Owner: "u", Model: "model-a", RequestID: "req-a", Attempts: 2, Cost: 2, Refund: 2},
		{ID: b.ID, Owner: "v", Model: "model-b", Attempts: 2, Cost: 3, Refund: 3},
	}))
	is.Equal(get(t, s, "u", c.ID).Status, imagegen.StatusPending)
	for _, f := range failed {
		got := getFailed(t, s, f.Owner, f.ID, imagegen.CodeInternal)
		is.Equal(got.Error, storekit.ExpiredLeaseMessage(2))
	}
	is.Equal(balance(t, s, "u"), int64(10-1)) // a refunded, c still charged
	is.Equal(balance(t, s, "v"), int64(10))

	// Nothing is reported twice.
	is.Equal(recoverAfterLease(t, h, 2).Moved(), 0)
}

// testRecoveryReportsNoRefundForAFreeRetry checks that a task an
// operator gave back to the queue free of charge is reported failed with
// no refund, as its ledger has none.
func testRecoveryReportsNoRefundForAFreeRetry(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	task := submitFunded(t, s, "u", 3)
	for _, refund := range []int64{3, 0} { // failed and refunded; retried free, failed again
		claim(t, s)
		rec := recoverAfterLease(t, h, 1)
		is.Equal(len(rec.Failed), 1)
		is.Equal(rec.Failed[0].ID, task.ID)
		is.Equal(rec.Failed[0].Cost, int64(3))
		is.Equal(rec.Failed[0].Refund, refund)
		is.Equal(balance(t, s, "u"), int64(3))
		if refund > 0 {
			is.NoErr(s.RequeueTask(ctx, task.ID, false))
		}
	}
	is.Equal(countRefs(checkLedger(t, s, "u"), "refund:"+task.ID), 1) // the first failure's only
}

// testConcurrentRecoveriesReportEachFailureOnce checks that recoveries
// running at once (one per worker process) split the expired tasks: each
// failure is reported by exactly one of them, so it is counted once, and
// none is missed however many there are.
func testConcurrentRecoveriesReportEachFailureOnce(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	const tasks = 130 // more than one batch of a backend that recovers in batches of 100
	grant(t, s, "u", tasks)
	want := map[string]int{}
	for range tasks {
		want[submit(t, s, "u", 1).ID] = 0
	}
	for range tasks {
		claim(t, s)
	}
	h.Advance(lease)

	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		seen   = map[string]int{}
		others int
	)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec, err := s.RecoverExpired(ctx, 1)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("recover: %v", err)
			}
			others += rec.Requeued
			for _, f := range rec.Failed {
				seen[f.ID]++
			}
		}()
	}
	wg.Wait()
	is.Equal(others, 0)
	for id := range want {
		want[id] = 1
	}
	is.Equal(fmt.Sprint(seen), fmt.Sprint(want)) // every task once, and nothing else
	is.Equal(balance(t, s, "u"), int64(tasks))
}

// byID sorts failed tasks by id (RecoverExpired keeps no order).
func byID(failed []imagegen.ExpiredTask) []imagegen.ExpiredTask {
	out := append([]imagegen.ExpiredTask(nil), failed...)
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// testClaimedTaskIsTheStoredTask: what a claim returns is the task as
// the store now holds it (Task reads it back the same), on its first
// claim, after a retry and after a release.
func testClaimedTaskIsTheStoredTask(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	grant(t, s, "u", 1)
	task := newTask("u", 1)
	task.RequestID = "req-1"
	task.Request.CallbackURL = "https://example.com/hook"
	create(t, s, task)
	same := func(claimed *imagegen.Task) {
		t.Helper()
		stored := get(t, s, "u", claimed.ID)
		if !reflect.DeepEqual(claimed, stored) {
			t.Fatalf("claimed task differs from the stored one:\nclaimed %+v\nstored  %+v", claimed, stored)
		}
	}
	first := claim(t, s)
	same(first)
	is.NoErr(s.RetryTask(ctx, first.ID, first.Attempt, time.Second, "503 from provider"))
	h.Advance(time.Second)
	second := claim(t, s)
	is.Equal(second.LastError, "503 from provider")
	same(second)
	is.NoErr(s.ReleaseTask(ctx, second.ID, second.Attempt))
	third := claim(t, s)
	is.Equal(third.Released, 1)
	same(third)
}
