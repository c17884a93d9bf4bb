package storetest

import (
	"errors"
	"fmt"

	"github.com/imagegen/imagegen"
)

// This file holds the credit operations of
// RandomOperationsAgreeWithModel: grants, web charges and reused
// references.

func (m *refModel) opGrant() {
	owner, amount, ref := m.owner(), int64(2+m.rng.IntN(7)), m.nextRef("grant")
	m.lastOp = fmt.Sprintf("grant %d to %s", amount, owner)
	b, err := m.s.AddEntry(ctx, imagegen.LedgerEntry{Owner: owner, Kind: imagegen.LedgerGrant, Amount: amount, Ref: ref})
	if err != nil {
		m.fatalf("grant: %v", err)
	}
	m.apply(owner, imagegen.LedgerGrant, amount, ref)
	if b != m.balances[owner] {
		m.fatalf("grant returned balance %d, model %d", b, m.balances[owner])
	}
	m.checkOwner(owner)
}

func (m *refModel) opWebCharge() {
	owner, amount, ref := m.owner(), int64(1+m.rng.IntN(3)), m.nextRef("web")
	m.lastOp = fmt.Sprintf("web charge %d to %s (balance %d)", amount, owner, m.balances[owner])
	b, err := m.s.AddEntry(ctx, imagegen.LedgerEntry{Owner: owner, Kind: imagegen.LedgerWeb, Amount: -amount, Ref: ref})
	if m.balances[owner] < amount {
		if !errors.Is(err, imagegen.ErrInsufficientCredits) {
			m.fatalf("web charge beyond the balance: %v, want ErrInsufficientCredits", err)
		}
	} else {
		if err != nil {
			m.fatalf("web charge: %v", err)
		}
		m.apply(owner, imagegen.LedgerWeb, -amount, ref)
		if b != m.balances[owner] {
			m.fatalf("web charge returned balance %d, model %d", b, m.balances[owner])
		}
	}
	m.checkOwner(owner)
}

// opDuplicateEntry repeats a reference the owner used: refused, the
// current balance returned, nothing changed.
func (m *refModel) opDuplicateEntry() {
	owner := m.owner()
	var used []string
	for _, e := range m.ledger[owner] {
		if e.kind == imagegen.LedgerGrant {
			used = append(used, e.ref)
		}
	}
	if len(used) == 0 {
		return
	}
	ref := pick(m.rng, used)
	m.lastOp = fmt.Sprintf("grant to %s again under %s", owner, ref)
	b, err := m.s.AddEntry(ctx, imagegen.LedgerEntry{Owner: owner, Kind: imagegen.LedgerGrant, Amount: 5, Ref: ref})
	if !errors.Is(err, imagegen.ErrDuplicateEntry) {
		m.fatalf("a repeated reference: %v, want ErrDuplicateEntry", err)
	}
	if b != m.balances[owner] {
		m.fatalf("a repeated reference returned balance %d, model %d", b, m.balances[owner])
	}
	m.checkOwner(owner)
}
