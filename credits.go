package imagegen

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
)

// Credit rules. The price of a task is chosen at submit from the model
// that will run it (Model.Plan) and is debited with the task's creation in
// one atomic store operation. A task that ends failed is refunded exactly
// once by the store (FailTask, RecoverExpired, CancelTask). Grants and the
// host app's web charges go through the same append-only ledger, so API
// and web use share one balance, which never goes below zero.

func checkCost(cost int64) error {
	if cost < MinCost || cost > MaxCost {
		return fmt.Errorf("cost must be %d to %d credits (got %d)", MinCost, MaxCost, cost)
	}
	return nil
}

// Grant adds amount credits to owner's balance. ref makes the grant
// idempotent: a second grant with the same ref returns ErrDuplicateEntry
// and the unchanged balance. An empty ref makes a unique one.
func (s *Service) Grant(ctx context.Context, owner string, amount int64, ref string) (int64, error) {
	e, err := GrantEntry(owner, amount, ref)
	if err != nil {
		return 0, err
	}
	return s.addEntry(ctx, e)
}

// ChargeWeb debits amount credits for the host app's own (web) use of the
// shared balance. ref is an idempotency key: the same ref twice charges
// once (the second call returns ErrDuplicateEntry). It returns
// ErrInsufficientCredits, and charges nothing, when the balance is short.
func (s *Service) ChargeWeb(ctx context.Context, owner string, amount int64, ref string) (int64, error) {
	e, err := WebChargeEntry(owner, amount, ref)
	if err != nil {
		return 0, err
	}
	return s.addEntry(ctx, e)
}

// GrantEntry is the ledger entry Grant appends (the same rules, for a
// store that appends it inside a host app's transaction).
func GrantEntry(owner string, amount int64, ref string) (LedgerEntry, error) {
	return newEntry(owner, LedgerGrant, amount, ref)
}

// WebChargeEntry is the ledger entry ChargeWeb appends.
func WebChargeEntry(owner string, amount int64, ref string) (LedgerEntry, error) {
	return newEntry(owner, LedgerWeb, amount, ref)
}

func newEntry(owner string, kind LedgerKind, amount int64, ref string) (LedgerEntry, error) {
	switch {
	case amount <= 0:
		return LedgerEntry{}, invalid("amount", "must be positive (got %d)", amount)
	case owner == "":
		return LedgerEntry{}, invalid("owner", "is required")
	}
	if kind == LedgerWeb {
		amount = -amount
	}
	return LedgerEntry{Owner: owner, Kind: kind, Amount: amount, Ref: refOr(ref, string(kind))}, nil
}

// Balance returns owner's credit balance.
func (s *Service) Balance(ctx context.Context, owner string) (int64, error) {
	b, err := s.cfg.Store.Balance(ctx, owner)
	if err != nil {
		return 0, fmt.Errorf("imagegen: balance: %w", err)
	}
	return b, nil
}

// Ledger returns owner's ledger entries, oldest first. Their amounts
// always add up to Balance.
func (s *Service) Ledger(ctx context.Context, owner string) ([]LedgerEntry, error) {
	l, err := s.cfg.Store.Ledger(ctx, owner)
	if err != nil {
		return nil, fmt.Errorf("imagegen: ledger: %w", err)
	}
	return l, nil
}

func (s *Service) addEntry(ctx context.Context, e LedgerEntry) (int64, error) {
	b, err := s.cfg.Store.AddEntry(ctx, e)
	if err != nil {
		if errors.Is(err, ErrDuplicateEntry) {
			return b, fmt.Errorf("imagegen: %s %q: %w", e.Kind, e.Ref, err)
		}
		return 0, fmt.Errorf("imagegen: %s: %w", e.Kind, err)
	}
	return b, nil
}

func refOr(ref, kind string) string {
	if ref != "" {
		return kind + ":" + ref
	}
	return kind + ":" + uuid.NewString()
}
