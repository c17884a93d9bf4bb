package storetest

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
)

var taskSeq atomic.Int64

// newTask returns a task with a unique id, as Service.Submit makes it.
func newTask(owner string, cost int64) *imagegen.Task {
	return &imagegen.Task{
		ID:    imagegen.NewOwnedID(owner), // as Service.Submit makes them: a sharded store places a task by its id
		Owner: owner,
		Request: imagegen.Request{
			Scene:       imagegen.SceneImageToImage,
			Prompt:      "a lighthouse at dusk",
			AspectRatio: imagegen.Aspect16x9,
			ImageInput:  []string{"https://example.com/a.png"},
		},
		Model:  "test",
		Cost:   cost,
		Status: imagegen.StatusPending,
	}
}

func grant(t *testing.T, s imagegen.Store, owner string, amount int64) {
	t.Helper()
	if _, err := s.AddEntry(ctx, imagegen.LedgerEntry{
		Owner: owner, Kind: imagegen.LedgerGrant, Amount: amount, Ref: fmt.Sprintf("grant:%d", taskSeq.Add(1)),
	}); err != nil {
		t.Fatalf("grant: %v", err)
	}
}

// submit grants nothing: it creates a task of cost for owner.
func submit(t *testing.T, s imagegen.Store, owner string, cost int64) *imagegen.Task {
	t.Helper()
	return create(t, s, newTask(owner, cost))
}

// create stores a task the test has shaped itself (see newTask) and
// returns it.
func create(t *testing.T, s imagegen.Store, task *imagegen.Task) *imagegen.Task {
	t.Helper()
	if _, err := s.CreateTask(ctx, task, imagegen.CreateParams{}); err != nil {
		t.Fatalf("create task: %v", err)
	}
	return task
}

// submitApart, like submit, grants nothing: it creates n tasks of cost 1
// for owner, a millisecond apart so that every store sees their order,
// and returns their ids, oldest first.
func submitApart(t *testing.T, h Harness, owner string, n int) []string {
	t.Helper()
	ids := make([]string, 0, n)
	for range n {
		ids = append(ids, submit(t, h.Store, owner, 1).ID)
		h.Advance(time.Millisecond)
	}
	return ids
}

// submitFunded grants owner the cost of one task and submits it.
func submitFunded(t *testing.T, s imagegen.Store, owner string, cost int64) *imagegen.Task {
	t.Helper()
	grant(t, s, owner, cost)
	return submit(t, s, owner, cost)
}

// startTask grants owner the cost of one task, submits it and claims it.
// It returns the task as submitted and as claimed (same id; the claim
// carries the attempt, the fencing token).
func startTask(t *testing.T, s imagegen.Store, owner string, cost int64) (task, claimed *imagegen.Task) {
	t.Helper()
	task = submitFunded(t, s, owner, cost)
	claimed = claim(t, s)
	if claimed.ID != task.ID {
		t.Fatalf("claimed %s, want the task just submitted, %s", claimed.ID, task.ID)
	}
	return task, claimed
}

// claimHooks leases up to n due webhook deliveries.
func claimHooks(t *testing.T, s imagegen.Store, n int) []imagegen.WebhookDelivery {
	t.Helper()
	got, err := s.ClaimWebhooks(ctx, lease, n)
	if err != nil {
		t.Fatalf("claim webhooks: %v", err)
	}
	return got
}

// dueAfter checks that no webhook delivery is due until wait has passed,
// then claims those due.
func dueAfter(t *testing.T, h Harness, wait time.Duration) []imagegen.WebhookDelivery {
	t.Helper()
	if got := claimHooks(t, h.Store, 10); len(got) != 0 {
		t.Fatalf("%d deliveries due before %v passed", len(got), wait)
	}
	h.Advance(wait)
	return claimHooks(t, h.Store, 10)
}

func claim(t *testing.T, s imagegen.Store) *imagegen.Task {
	t.Helper()
	task, err := s.ClaimTask(ctx, lease)
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	return task
}

// recoverNow recovers the tasks whose leases have run out by now.
func recoverNow(t *testing.T, s imagegen.Store, maxAttempts int) imagegen.Recovery {
	t.Helper()
	rec, err := s.RecoverExpired(ctx, maxAttempts)
	if err != nil {
		t.Fatalf("recover: %v", err)
	}
	return rec
}

// recoverAfterLease lets every lease run out and recovers.
func recoverAfterLease(t *testing.T, h Harness, maxAttempts int) imagegen.Recovery {
	t.Helper()
	h.Advance(lease)
	return recoverNow(t, h.Store, maxAttempts)
}

func get(t *testing.T, s imagegen.Store, owner, id string) *imagegen.Task {
	t.Helper()
	task, err := s.Task(ctx, owner, id)
	if err != nil {
		t.Fatalf("task %s: %v", id, err)
	}
	return task
}

func balance(t *testing.T, s imagegen.Store, owner string) int64 {
	t.Helper()
	b, err := s.Balance(ctx, owner)
	if err != nil {
		t.Fatalf("balance: %v", err)
	}
	return b
}

// checkLedger asserts that the owner's entries add up to the balance and
// returns them.
func checkLedger(t *testing.T, s imagegen.Store, owner string) []imagegen.LedgerEntry {
	t.Helper()
	entries, err := s.Ledger(ctx, owner)
	if err != nil {
		t.Fatalf("ledger: %v", err)
	}
	var sum int64
	for _, e := range entries {
		sum += e.Amount
	}
	if b := balance(t, s, owner); sum != b || b < 0 {
		t.Fatalf("ledger sums to %d, balance is %d", sum, b)
	}
	return entries
}

func countRefs(entries []imagegen.LedgerEntry, ref string) int {
	n := 0
	for _, e := range entries {
		if e.Ref == ref {
			n++
		}
	}
	return n
}

// getFailed returns the owner's task id and checks that it has failed
// with code, saying why, and is finished.
func getFailed(t *testing.T, s imagegen.Store, owner, id string, code imagegen.ErrorCode) *imagegen.Task {
	t.Helper()
	task := get(t, s, owner, id)
	switch {
	case task.Status != imagegen.StatusFailed:
		t.Fatalf("task %s is %s, want %s", id, task.Status, imagegen.StatusFailed)
	case task.ErrorCode != code:
		t.Fatalf("task %s failed with code %q, want %q", id, task.ErrorCode, code)
	case strings.TrimSpace(task.Error) == "":
		t.Fatalf("task %s failed with no message", id)
	case task.FinishedAt.IsZero():
		t.Fatalf("task %s failed with no finish time", id)
	}
	return task
}

// fail is a provider failure with the given message.
func fail(msg string) imagegen.Failure {
	return imagegen.Failure{Code: imagegen.CodeProviderError, Message: msg}
}
