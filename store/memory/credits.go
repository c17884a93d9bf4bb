package memory

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/imagegen/imagegen"
)

type account struct {
	balance int64
	entries []imagegen.LedgerEntry
	refs    map[string]struct{}
}

// AddEntry appends e to the owner's ledger.
func (s *Store) AddEntry(_ context.Context, e imagegen.LedgerEntry) (int64, error) {
	if err := imagegen.CheckLedgerEntry(e); err != nil {
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
