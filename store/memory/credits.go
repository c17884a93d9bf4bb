package memory

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/store/storekit"
)

type account struct {
	balance int64
	entries []imagegen.LedgerEntry
	refs    map[string]struct{}
}

// AddEntry appends e to the owner's ledger.
func (s *Store) AddEntry(_ context.Context, e imagegen.LedgerEntry) (int64, error) {
	if err := storekit.CheckLedgerEntry(e); err != nil {
		return 0, err
	}
	now := s.lock()
	defer s.mu.Unlock()
	return s.appendEntry(e, now)
}

// appendEntry applies the ledger rules; s.mu is held.
func (s *Store) appendEntry(e imagegen.LedgerEntry, now time.Time) (int64, error) {
	a := s.accounts[e.Owner]
	if a == nil {
		a = &account{refs: make(map[string]struct{})}
		s.accounts[e.Owner] = a
	}
	if _, dup := a.refs[e.Ref]; dup {
		return a.balance, fmt.Errorf("memory: ref %q: %w", e.Ref, imagegen.ErrDuplicateEntry)
	}
	if a.balance+e.Amount < 0 {
		return a.balance, imagegen.ErrInsufficientCredits
	}
	e.At = now
	a.balance += e.Amount
	e.ID, e.BalanceAfter = strconv.Itoa(len(a.entries)+1), a.balance
	a.entries = append(a.entries, e)
	a.refs[e.Ref] = struct{}{}
	return a.balance, nil
}

// Balance returns the owner's balance.
func (s *Store) Balance(_ context.Context, owner string) (int64, error) {
	s.lock()
	defer s.mu.Unlock()
	if a := s.accounts[owner]; a != nil {
		return a.balance, nil
	}
	return 0, nil
}

// Ledger returns a copy of the owner's entries, oldest first.
func (s *Store) Ledger(_ context.Context, owner string) ([]imagegen.LedgerEntry, error) {
	s.lock()
	defer s.mu.Unlock()
	if a := s.accounts[owner]; a != nil {
		return slices.Clone(a.entries), nil
	}
	return nil, nil
}

// ListLedger returns a page of the owner's entries, newest first. An
// entry's ID is its position in the ledger (from 1), and the cursor is
// the ID of the last entry of the previous page.
func (s *Store) ListLedger(_ context.Context, owner string, limit int, cursor string) (imagegen.LedgerPage, error) {
	s.lock()
	defer s.mu.Unlock()
	var entries []imagegen.LedgerEntry
	if a := s.accounts[owner]; a != nil {
		entries = a.entries
	}
	end := len(entries) // entries[:end] are still to be listed
	if cursor != "" {
		n, err := strconv.Atoi(cursor)
		if err != nil || n < 1 || n > len(entries) || strconv.Itoa(n) != cursor {
			return imagegen.LedgerPage{}, fmt.Errorf("memory: bad ledger cursor: %w", imagegen.ErrInvalidParams)
		}
		end = n - 1
	}
	start := max(0, end-limit)
	page := imagegen.LedgerPage{Entries: make([]imagegen.LedgerEntry, 0, end-start)}
	for i := end - 1; i >= start; i-- {
		page.Entries = append(page.Entries, entries[i])
	}
	if start > 0 {
		page.Next = entries[start].ID
	}
	return page, nil
}
