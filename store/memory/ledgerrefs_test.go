package memory

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
)

// TestLedgerRefsComeBackAsGiven: every form of reference (a task's
// charge and refund by a UUID id, kept as bytes; an operator's
// recharge, a non-UUID or upper-case id, a grant, kept as text) reads
// back as it was given, with its kind, and each is refused a second
// time, while the same UUID in upper case is another reference.
func TestLedgerRefsComeBackAsGiven(t *testing.T) {
	ctx := context.Background()
	s, err := New(Config{Clock: imagegentest.NewClock(time.Time{})})
	if err != nil {
		t.Fatal(err)
	}
	id := imagegen.NewOwnedID("u")
	upper := strings.ToUpper(id)
	given := []imagegen.LedgerEntry{
		{Kind: imagegen.LedgerGrant, Amount: 100, Ref: "grant:1"},
		{Kind: imagegen.LedgerCharge, Amount: -3, Ref: imagegen.ChargeRef(id)},
		{Kind: imagegen.LedgerRefund, Amount: 3, Ref: imagegen.RefundRef(id)},
		{Kind: imagegen.LedgerCharge, Amount: -3, Ref: imagegen.RechargeRef(id, 1)},
		{Kind: imagegen.LedgerRefund, Amount: 3, Ref: imagegen.RerefundRef(id, 1)},
		{Kind: imagegen.LedgerCharge, Amount: -1, Ref: imagegen.ChargeRef(upper)},
		{Kind: imagegen.LedgerCharge, Amount: -1, Ref: imagegen.ChargeRef("plain-id")},
		{Kind: "custom", Amount: 5, Ref: "any text"},
		{Kind: imagegen.LedgerWeb, Amount: -2, Ref: "web:" + id},
	}
	s.mu.Lock()
	for _, e := range given {
		e.Owner = "u"
		if _, err := s.appendEntry(e, time.Time{}); err != nil {
			t.Fatalf("%s: %v", e.Ref, err)
		}
	}
	for _, e := range given {
		e.Owner = "u"
		if _, err := s.appendEntry(e, time.Time{}); !errors.Is(err, imagegen.ErrDuplicateEntry) {
			t.Errorf("%s a second time: %v, want ErrDuplicateEntry", e.Ref, err)
		}
	}
	s.mu.Unlock()
	got, err := s.Ledger(ctx, "u")
	if err != nil || len(got) != len(given) {
		t.Fatalf("Ledger: %d entries, %v", len(got), err)
	}
	for i, e := range got {
		if e.Ref != given[i].Ref || e.Kind != given[i].Kind || e.Amount != given[i].Amount {
			t.Errorf("entry %d: %s %s %d, want %s %s %d", i, e.Kind, e.Ref, e.Amount, given[i].Kind, given[i].Ref, given[i].Amount)
		}
	}
	if a := s.accounts["u"]; len(a.refs.tasks) != 2 {
		t.Errorf("%d references kept as task refs, want 2 (the UUID's charge and refund)", len(a.refs.tasks))
	}
}

// TestChargeRefOfASubmit: CreateTask, which hands the ledger the id it
// parsed, charges under imagegen.ChargeRef(id) for a UUID id and any
// other, and a task submitted again under the id of one retention
// removed is refused as a duplicate charge (the ledger is kept whole).
func TestChargeRefOfASubmit(t *testing.T) {
	ctx := context.Background()
	clock := imagegentest.NewClock(time.Time{})
	s, err := New(Config{Clock: clock, Retention: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "u", Kind: imagegen.LedgerGrant, Amount: 10, Ref: "g"}); err != nil {
		t.Fatal(err)
	}
	ids := []string{imagegen.NewOwnedID("u"), "plain-id"}
	for _, id := range ids {
		if _, err := s.CreateTask(ctx, &imagegen.Task{ID: id, Owner: "u", Cost: 1, Request: imagegen.Request{Prompt: "p"}}, imagegen.CreateParams{}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CancelTask(ctx, "u", id, imagegen.CancelParams{}); err != nil {
			t.Fatal(err)
		}
	}
	ledger, err := s.Ledger(ctx, "u")
	if err != nil {
		t.Fatal(err)
	}
	if len(ledger) != 5 || ledger[1].Ref != imagegen.ChargeRef(ids[0]) || ledger[3].Ref != imagegen.ChargeRef(ids[1]) ||
		ledger[2].Ref != imagegen.RefundRef(ids[0]) || ledger[4].Ref != imagegen.RefundRef(ids[1]) {
		t.Fatalf("ledger %+v", ledger)
	}
	clock.Advance(time.Minute)
	for _, id := range ids {
		_, err := s.CreateTask(ctx, &imagegen.Task{ID: id, Owner: "u", Cost: 1, Request: imagegen.Request{Prompt: "p"}}, imagegen.CreateParams{})
		if !errors.Is(err, imagegen.ErrDuplicateEntry) || !strings.Contains(err.Error(), imagegen.ChargeRef(id)) {
			t.Errorf("submit again as %s: %v, want ErrDuplicateEntry naming its charge", id, err)
		}
	}
}
