package storetest

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/imagegen/imagegen"
)

var taskSeq atomic.Int64

// newTask returns a task with a unique id, as Service.Submit makes it.
func newTask(owner string, cost int64) *imagegen.Task {
	return &imagegen.Task{
		ID:    fmt.Sprintf("storetest-%d-%d", taskSeq.Add(1), cost),
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
	task := newTask(owner, cost)
	if _, err := s.CreateTask(ctx, task); err != nil {
		t.Fatalf("create task: %v", err)
	}
	return task
}

func claim(t *testing.T, s imagegen.Store) *imagegen.Task {
	t.Helper()
	task, err := s.ClaimTask(ctx, lease)
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	return task
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

// fail is a provider failure with the given message.
func fail(msg string) imagegen.Failure {
	return imagegen.Failure{Code: imagegen.CodeProviderError, Message: msg}
}
