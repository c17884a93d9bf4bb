package imagegen

import (
	"context"
	"errors"
	"fmt"

	"github.com/imagegen/imagegen/internal/pgtext"
)

// Credit rules. The price of a task is chosen at submit from the model
// that will run it (Model.Plan) and is debited with the task's creation in
// one atomic store operation. A task that ends failed is refunded exactly
// once by the store (FailTask, RecoverExpired, CancelTask), but for one
// its owner cancelled once a worker had claimed it (CancelTask with
// CancelParams.KeepStartedCharge): its generation had begun, and it keeps
// its charge. Grants and the
// host app's web charges go through the same append-only ledger, so API
// and web use share one balance, which never goes below zero.

func checkCost(cost int64) error {
	if cost < MinCost || cost > MaxCost {
		return fmt.Errorf("cost must be %d to %d credits (got %d)", MinCost, MaxCost, cost)
	}
	return nil
}

// LedgerResult is the outcome of a grant or a web charge.
type LedgerResult struct {
	// Balance is the owner's balance after the call.
	Balance int64
	// AlreadyApplied reports that an entry with the same reference was
	// applied before: this call changed nothing.
	AlreadyApplied bool
}

// Grant adds amount credits to owner's balance, once per ref: ref (for
// example an invoice or payment id) is required, and a grant repeated
// with the same ref changes nothing and reports AlreadyApplied, so a
// retried payment callback cannot grant twice.
func (s *Service) Grant(ctx context.Context, owner string, amount int64, ref string) (LedgerResult, error) {
	e, err := GrantEntry(owner, amount, ref)
	if err != nil {
		return LedgerResult{}, err
	}
	return s.applyOnce(ctx, e)
}

// ChargeWeb debits amount credits for the host app's own (web) use of the
// shared balance, once per ref: ref (for example an order id or the
// request's idempotency key) is required, and a charge repeated with the
// same ref changes nothing and reports AlreadyApplied, so a retried click
// cannot charge twice. When the balance is short it returns
// ErrInsufficientCredits and charges nothing.
func (s *Service) ChargeWeb(ctx context.Context, owner string, amount int64, ref string) (LedgerResult, error) {
	e, err := WebChargeEntry(owner, amount, ref)
	if err != nil {
		return LedgerResult{}, err
	}
	return s.applyOnce(ctx, e)
}

// MaxLedgerRefLength bounds the reference of a grant or web charge.
const MaxLedgerRefLength = 200

// GrantEntry is the ledger entry Grant appends, checked by the same
// rules, for a store that appends it inside a host app's own transaction
// (postgres.Store.GrantTx). Its Ref is ref namespaced by kind, so a
// grant and a web charge may share an order id.
func GrantEntry(owner string, amount int64, ref string) (LedgerEntry, error) {
	return newEntry(owner, LedgerGrant, amount, ref)
}

// WebChargeEntry is the ledger entry ChargeWeb appends (see GrantEntry).
func WebChargeEntry(owner string, amount int64, ref string) (LedgerEntry, error) {
	return newEntry(owner, LedgerWeb, amount, ref)
}

func newEntry(owner string, kind LedgerKind, amount int64, ref string) (LedgerEntry, error) {
	switch {
	case amount <= 0:
		return LedgerEntry{}, invalid("amount", "must be positive (got %d)", amount)
	case ref == "":
		return LedgerEntry{}, invalid("ref", "is required: it makes a retried call apply once")
	case len(ref) > MaxLedgerRefLength:
		return LedgerEntry{}, invalid("ref", "must be at most %d bytes", MaxLedgerRefLength)
	case !pgtext.Storable(ref):
		return LedgerEntry{}, invalid("ref", notStorable)
	}
	if err := checkOwner(owner); err != nil {
		return LedgerEntry{}, err
	}
	if kind == LedgerWeb {
		amount = -amount
	}
	return LedgerEntry{Owner: owner, Kind: kind, Amount: amount, Ref: string(kind) + ":" + ref}, nil
}

// LedgerOutcome turns what a store's AddEntry returned for an entry of
// GrantEntry or WebChargeEntry into the result Grant and ChargeWeb give:
// a duplicate reference is AlreadyApplied, not an error.
func LedgerOutcome(balance int64, err error) (LedgerResult, error) {
	if errors.Is(err, ErrDuplicateEntry) {
		return LedgerResult{Balance: balance, AlreadyApplied: true}, nil
	}
	if err != nil {
		return LedgerResult{}, err
	}
	return LedgerResult{Balance: balance}, nil
}

// applyOnce adds e, once per reference.
func (s *Service) applyOnce(ctx context.Context, e LedgerEntry) (LedgerResult, error) {
	return LedgerOutcome(s.addEntry(ctx, e))
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

// ListLedger returns a page of owner's ledger, newest first: up to limit
// entries (0 means DefaultListLimit, at most MaxListLimit), after cursor
// (the previous page's Next; "" for the first page). Each entry carries
// its ID and the balance after it, so the newest entry's BalanceAfter is
// the balance when the page was read. Cursors are opaque and bound to
// owner and the ledger, as ListTasks's are to theirs.
func (s *Service) ListLedger(ctx context.Context, owner string, limit int, cursor string) (LedgerPage, error) {
	limit, err := checkPage(limit, cursor)
	if err != nil {
		return LedgerPage{}, err
	}
	return ownerPage(ctx, s, "ledger", owner, cursor, func(after string) (LedgerPage, error) {
		return s.cfg.Store.ListLedger(ctx, owner, limit, after)
	}, func(p *LedgerPage) *string { return &p.Next })
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

// notStorable is what a field that is not pgtext.Storable is told.
const notStorable = "must be valid UTF-8 without the NUL character (U+0000)"
