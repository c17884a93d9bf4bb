package storetest

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
)

// testLedgerPages: ListLedger walks the ledger newest first, each entry
// with its ID and the balance after it, in pages that join up.
func testLedgerPages(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	page, err := s.ListLedger(ctx, "u", 10, "")
	is.NoErr(err)
	is.Equal(len(page.Entries), 0) // no ledger yet
	is.Equal(page.Next, "")

	grant(t, s, "u", 10)
	a, b := submit(t, s, "u", 3), submit(t, s, "u", 2)
	c := claim(t, s)
	is.NoErr(errOf(s.FailTask(ctx, c.ID, c.Attempt, fail("no")))) // refunds a
	_, err = s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "u", Kind: imagegen.LedgerWeb, Amount: -4, Ref: "web:x"})
	is.NoErr(err)
	grant(t, s, "v", 5) // another owner's ledger stays apart

	entries := listLedger(t, s, "u", 2)
	is.Equal(len(entries), 5)
	wantKinds := []imagegen.LedgerKind{imagegen.LedgerWeb, imagegen.LedgerRefund, imagegen.LedgerCharge, imagegen.LedgerCharge, imagegen.LedgerGrant}
	wantAmounts := []int64{-4, 3, -2, -3, 10}
	wantAfter := []int64{4, 8, 5, 7, 10}
	wantRefs := []string{"web:x", imagegen.RefundRef(a.ID), imagegen.ChargeRef(b.ID), imagegen.ChargeRef(a.ID), ""}
	for i, e := range entries {
		is.Equal(e.Owner, "u")
		is.Equal(e.Kind, wantKinds[i])
		is.Equal(e.Amount, wantAmounts[i])
		is.Equal(e.BalanceAfter, wantAfter[i])
		if wantRefs[i] != "" {
			is.Equal(e.Ref, wantRefs[i])
		}
		is.True(!e.At.IsZero())
	}
	// The same IDs and balances as the whole ledger, oldest first.
	all := checkLedger(t, s, "u")
	is.Equal(len(all), 5)
	for i, e := range all {
		is.Equal(e.ID, entries[4-i].ID)
		is.Equal(e.BalanceAfter, entries[4-i].BalanceAfter)
	}
	// Bad cursors are refused, not read as the start.
	for _, cursor := range []string{"x", "-1", "0", "999", "02"} {
		_, err := s.ListLedger(ctx, "u", 2, cursor)
		is.True(errors.Is(err, imagegen.ErrInvalidParams)) // cursor refused
	}
}

// listLedger reads all of owner's ledger through ListLedger, limit at a
// time, and checks what every page must hold: IDs unique and falling,
// each balance the one after it less its amount, the newest balance the
// owner's balance, and the entries adding up to it.
func listLedger(t *testing.T, s imagegen.Store, owner string, limit int) []imagegen.LedgerEntry {
	t.Helper()
	var all []imagegen.LedgerEntry
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 10000 {
			t.Fatal("ledger pages never end")
		}
		page, err := s.ListLedger(ctx, owner, limit, cursor)
		if err != nil {
			t.Fatalf("list ledger: %v", err)
		}
		if len(page.Entries) > limit || (page.Next != "" && len(page.Entries) != limit) {
			t.Fatalf("page of %d entries (limit %d, next %q)", len(page.Entries), limit, page.Next)
		}
		all = append(all, page.Entries...)
		if page.Next == "" {
			break
		}
		cursor = page.Next
	}
	b := balance(t, s, owner)
	var sum int64
	seen := map[string]bool{}
	for i, e := range all {
		sum += e.Amount
		if e.ID == "" || seen[e.ID] {
			t.Fatalf("entry %d: ID %q missing or repeated", i, e.ID)
		}
		seen[e.ID] = true
		if i == 0 && e.BalanceAfter != b {
			t.Fatalf("newest entry's balance_after %d, balance %d", e.BalanceAfter, b)
		}
		if i > 0 && all[i-1].BalanceAfter-all[i-1].Amount != e.BalanceAfter {
			t.Fatalf("entry %s: balance_after %d, but the next entry (%+d) ends at %d", e.ID, e.BalanceAfter, all[i-1].Amount, all[i-1].BalanceAfter)
		}
		if e.BalanceAfter < 0 {
			t.Fatalf("entry %s: balance_after %d below zero", e.ID, e.BalanceAfter)
		}
	}
	if sum != b {
		t.Fatalf("listed entries sum to %d, balance is %d", sum, b)
	}
	if n := len(all); n > 0 && all[n-1].BalanceAfter != all[n-1].Amount {
		t.Fatalf("oldest entry: balance_after %d, amount %d", all[n-1].BalanceAfter, all[n-1].Amount)
	}
	return all
}

// testLedgerSumsUnderLoad: after 200 concurrent submits, refunds, grants
// and web charges, the listed entries add up to the balance, and every
// entry's balance_after follows from the one before.
func testLedgerSumsUnderLoad(t *testing.T, h Harness) {
	s := h.Store
	grant(t, s, "u", 150)
	for range 50 { // so that every refund finds a task to claim
		submit(t, s, "u", 1)
	}
	const n = 200
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			switch i % 4 {
			case 0: // a grant
				_, err = s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "u", Kind: imagegen.LedgerGrant, Amount: 2, Ref: "grant:load-" + strconv.Itoa(i)})
			case 1: // a web charge, refused when the balance is short
				_, err = s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "u", Kind: imagegen.LedgerWeb, Amount: -1, Ref: "web:load-" + strconv.Itoa(i)})
			case 2: // a submit, refused when the balance is short
				_, err = s.CreateTask(ctx, newTask("u", int64(1+i%3)), imagegen.CreateParams{})
			case 3: // a refund: claim any task and fail it
				var c *imagegen.Task
				if c, err = s.ClaimTask(ctx, lease); err == nil {
					err = errOf(s.FailTask(ctx, c.ID, c.Attempt, fail("load")))
				}
			}
			if err != nil && !errors.Is(err, imagegen.ErrInsufficientCredits) && !errors.Is(err, imagegen.ErrNoTask) {
				errs <- fmt.Errorf("op %d: %w", i, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	entries := listLedger(t, s, "u", imagegen.MaxListLimit)
	if len(entries) < n/2 {
		t.Fatalf("only %d entries after %d operations", len(entries), n)
	}
	refunds := 0
	for _, e := range entries {
		if e.Kind == imagegen.LedgerRefund {
			refunds++
		}
	}
	if refunds == 0 {
		t.Fatal("no refund among the entries: the load did not exercise refunds")
	}
	checkLedger(t, s, "u")
}
