package storetest

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
)

// big is a grant larger than 10^14 and below 2^53: every store keeps it,
// and every number of the ledger beside it, exactly.
const big = 1_000_000_000_000_001

// testLedgerKeepsLargeAmounts: a ledger holds a large grant and the
// balances after it exactly, through every kind of entry (a grant, a
// task's charge and refund, an operator's recharge and its refund, a web
// charge): it reads back, adds up to the balance, and each entry's
// BalanceAfter is the sum up to it.
func testLedgerKeepsLargeAmounts(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	_, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "u", Kind: imagegen.LedgerGrant, Amount: big, Ref: "grant:big"})
	is.NoErr(err)
	task, c := startTask(t, s, "u", 3) // a grant of 3, and the charge
	_, err = s.FailTask(ctx, task.ID, c.Attempt, fail("provider down"))
	is.NoErr(err) // refunded
	is.NoErr(s.RequeueTask(ctx, task.ID, true))
	c = claim(t, s)
	_, err = s.FailTask(ctx, task.ID, c.Attempt, fail("still down"))
	is.NoErr(err) // refunded again
	_, err = s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "u", Kind: imagegen.LedgerWeb, Amount: -7, Ref: "web:spend"})
	is.NoErr(err)

	want := int64(big + 3 - 7)
	is.Equal(balance(t, s, "u"), want)
	entries := checkLedger(t, s, "u")
	is.Equal(len(entries), 7) // grant, grant, charge, refund, recharge, refund, web
	var sum int64
	for _, e := range entries {
		sum += e.Amount
		if e.BalanceAfter != sum {
			t.Fatalf("entry %s (%s %d) says the balance after it was %d, want %d", e.ID, e.Kind, e.Amount, e.BalanceAfter, sum)
		}
	}
	is.Equal(entries[0].Amount, int64(big))
	page, err := s.ListLedger(ctx, "u", 10, "")
	is.NoErr(err)
	is.Equal(len(page.Entries), 7)
	is.Equal(page.Entries[0].BalanceAfter, want)
}

// testLargeBalanceRefusalCostsNothing: a submit refused (its owner's
// queue is full) changes nothing of a balance above 2^53, where a
// double cannot hold every integer: the balance is exactly what the
// charges left, and the ledger adds up to it.
func testLargeBalanceRefusalCostsNothing(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	grantLarge(t, s)
	p := imagegen.CreateParams{MaxPending: 1}
	_, err := s.CreateTask(ctx, newTask("u", 3), p)
	is.NoErr(err)
	is.Equal(balance(t, s, "u"), int64(largeStart-3))
	_, err = s.CreateTask(ctx, newTask("u", 3), p)
	is.True(errors.Is(err, imagegen.ErrQueueFull))
	is.Equal(balance(t, s, "u"), int64(largeStart-3)) // the refused submit was not charged
	is.Equal(len(checkLedger(t, s, "u")), 2)
}

// testLargeBalanceNeverBelowZero: a web charge larger than a balance
// above 2^53 by less than a double's spacing there is refused, as any
// larger charge is: the balance never goes below zero.
func testLargeBalanceNeverBelowZero(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	grantLarge(t, s)
	_, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "u", Kind: imagegen.LedgerWeb, Amount: -(largeStart + 1), Ref: "web:all-and-one"})
	is.True(errors.Is(err, imagegen.ErrInsufficientCredits))
	is.Equal(balance(t, s, "u"), int64(largeStart))
	_, err = s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "u", Kind: imagegen.LedgerWeb, Amount: -largeStart, Ref: "web:all"})
	is.NoErr(err)
	is.Equal(balance(t, s, "u"), int64(0))
	is.Equal(len(checkLedger(t, s, "u")), 2)
}

// testLargeBalanceChargesSayTheBalance: above 2^53 too, a submit answers
// the balance its charge left, and the charge's ledger entry says it.
func testLargeBalanceChargesSayTheBalance(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	grantLarge(t, s)
	for i := int64(1); i <= 2; i++ {
		left, err := s.CreateTask(ctx, newTask("u", 3), imagegen.CreateParams{})
		is.NoErr(err)
		is.Equal(left, int64(largeStart-3*i)) // the balance after the charge
	}
	entries := checkLedger(t, s, "u")
	is.Equal(len(entries), 3)
	is.Equal(entries[1].BalanceAfter, int64(largeStart-3))
	is.Equal(entries[2].BalanceAfter, int64(largeStart-6))
}

// largeStart is the balance grantLarge gives: above 2^53, where a Lua
// number (a double) no longer holds every integer, and odd, so that it
// is not one.
const largeStart = 1<<56 + 1

// grantLarge grants owner "u" largeStart credits.
func grantLarge(t *testing.T, s imagegen.Store) {
	t.Helper()
	if _, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "u", Kind: imagegen.LedgerGrant, Amount: largeStart, Ref: "grant:large"}); err != nil {
		t.Fatal(err)
	}
}

// testRefundThatWouldOverflowEndsNothing: a refund that would take its
// owner's balance past math.MaxInt64 (the balance granted up to the
// largest after the charge) is not made, and the task is not ended
// without it: a failure and a cancel are refused with nothing changed,
// and a recovery leaves the task processing, its lease a minute longer.
// Once the balance can take it, the refund is made. (The memory store
// used to end the task failed and Refunded, report the refund, and drop
// it: the owner's credits were never given back.)
func testRefundThatWouldOverflowEndsNothing(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	_, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "rich", Kind: imagegen.LedgerGrant, Amount: 2, Ref: "grant:first"})
	is.NoErr(err)
	task := newTask("rich", 2)
	_, err = s.CreateTask(ctx, task, imagegen.CreateParams{})
	is.NoErr(err)
	top, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "rich", Kind: imagegen.LedgerGrant, Amount: math.MaxInt64, Ref: "grant:top"})
	is.NoErr(err)
	is.Equal(top, int64(math.MaxInt64))
	_, err = s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "rich", Kind: imagegen.LedgerGrant, Amount: 1, Ref: "grant:more"})
	is.True(errors.Is(err, imagegen.ErrInvalidParams)) // past the largest balance: the caller's mistake
	c := claim(t, s)

	_, err = s.FailTask(ctx, task.ID, c.Attempt, fail("down"))
	is.True(err != nil && !errors.Is(err, imagegen.ErrLeaseLost))
	_, err = s.CancelTask(ctx, "rich", task.ID, imagegen.CancelParams{})
	is.True(err != nil && !errors.Is(err, imagegen.ErrInvalidTransition))
	h.Advance(2 * lease)
	rec := recoverNow(t, s, 1)
	is.Equal(len(rec.Failed), 0)
	got, err := s.Task(ctx, "rich", task.ID)
	is.NoErr(err)
	is.Equal(got.Status, imagegen.StatusProcessing) // left as it was
	is.True(!got.Refunded)
	is.True(got.LeaseUntil.After(c.LeaseUntil)) // tried again later, its lease pushed out
	is.Equal(balance(t, s, "rich"), int64(math.MaxInt64))
	is.Equal(len(checkLedger(t, s, "rich")), 3)

	// Once the balance can take it, the refund is made.
	_, err = s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "rich", Kind: imagegen.LedgerWeb, Amount: -5, Ref: "web:spend"})
	is.NoErr(err)
	h.Advance(2 * time.Minute)
	rec = recoverNow(t, s, 1)
	is.Equal(len(rec.Failed), 1)
	is.Equal(rec.Failed[0].Refund, int64(2))
	got, err = s.Task(ctx, "rich", task.ID)
	is.NoErr(err)
	is.Equal(got.Status, imagegen.StatusFailed)
	is.True(got.Refunded)
	is.Equal(balance(t, s, "rich"), int64(math.MaxInt64-3))
	is.Equal(len(checkLedger(t, s, "rich")), 5)
}
