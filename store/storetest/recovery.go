package storetest

import (
	"fmt"
	"sort"
	"sync"
	"testing"

	"github.com/imagegen/imagegen"
	"github.com/matryer/is"
)

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
	_, err := s.CreateTask(ctx, a)
	is.NoErr(err)
	b := newTask("v", 3)
	b.Model = "model-b" // no request id
	_, err = s.CreateTask(ctx, b)
	is.NoErr(err)

	// First expiry: both requeued, nothing failed.
	claim(t, s)
	claim(t, s)
	h.Advance(lease)
	rec, err := s.RecoverExpired(ctx, 2)
	is.NoErr(err)
	is.Equal(rec.Requeued, 2)
	is.Equal(len(rec.Failed), 0)

	// Second expiry: a and b have used their attempts and fail; c, on
	// its first attempt, is requeued in the same call.
	c := submit(t, s, "u", 1)
	for range 3 {
		claim(t, s)
	}
	h.Advance(lease)
	rec, err = s.RecoverExpired(ctx, 2)
	is.NoErr(err)
	is.Equal(rec.Requeued, 1)
	is.Equal(rec.Moved(), 3)
	failed := byID(rec.Failed)
	is.Equal(failed, byID([]imagegen.ExpiredTask{
		{ID: a.ID, Owner: "u", Model: "model-a", RequestID: "req-a", Attempts: 2, Cost: 2, Refund: 2},
		{ID: b.ID, Owner: "v", Model: "model-b", Attempts: 2, Cost: 3, Refund: 3},
	}))
	is.Equal(get(t, s, "u", c.ID).Status, imagegen.StatusPending)
	for _, f := range failed {
		got := get(t, s, f.Owner, f.ID)
		is.Equal(got.Status, imagegen.StatusFailed)
		is.Equal(got.ErrorCode, imagegen.CodeInternal)
		is.Equal(got.Error, imagegen.ExpiredLeaseMessage(2))
	}
	is.Equal(balance(t, s, "u"), int64(10-1)) // a refunded, c still charged
	is.Equal(balance(t, s, "v"), int64(10))

	// Nothing is reported twice.
	h.Advance(lease)
	rec, err = s.RecoverExpired(ctx, 2)
	is.NoErr(err)
	is.Equal(rec.Moved(), 0)
}

// testRecoveryReportsNoRefundForAFreeRetry checks that a task an
// operator gave back to the queue free of charge is reported failed with
// no refund, as its ledger has none.
func testRecoveryReportsNoRefundForAFreeRetry(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	grant(t, s, "u", 2)
	task := submit(t, s, "u", 2)
	c := claim(t, s)
	is.NoErr(s.FailTask(ctx, task.ID, c.Attempt, fail("provider down")))
	is.NoErr(s.RequeueTask(ctx, task.ID, false))
	claim(t, s)
	h.Advance(lease)
	rec, err := s.RecoverExpired(ctx, 1)
	is.NoErr(err)
	is.Equal(rec.Requeued, 0)
	is.Equal(len(rec.Failed), 1)
	is.Equal(rec.Failed[0].ID, task.ID)
	is.Equal(rec.Failed[0].Cost, int64(2))
	is.Equal(rec.Failed[0].Refund, int64(0))
	is.Equal(balance(t, s, "u"), int64(2))
	is.Equal(countRefs(checkLedger(t, s, "u"), "refund:"+task.ID), 1) // the first failure's only
}

// testConcurrentRecoveriesReportEachFailureOnce checks that recoveries
// running at once (one per worker process) split the expired tasks: each
// failure is reported by exactly one of them, so it is counted once.
func testConcurrentRecoveriesReportEachFailureOnce(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	const tasks = 30
	grant(t, s, "u", tasks)
	want := map[string]int{}
	for range tasks {
		want[submit(t, s, "u", 1).ID] = 0
	}
	claimed, err := s.ClaimTasks(ctx, lease, tasks)
	is.NoErr(err)
	is.Equal(len(claimed), tasks)
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
