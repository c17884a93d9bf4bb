package client

import (
	"context"
	"errors"

	"github.com/imagegen/imagegen/wire"
)

// LedgerEntry is one change of the credit balance, as the API sends it
// (one definition for both sides of the wire: wire.LedgerEntry).
type LedgerEntry = wire.LedgerEntry

// LedgerPage is one page of Ledger, newest entries first; its NextCursor,
// when not "", is the Cursor of the next (older) page.
type LedgerPage = wire.Ledger

// LedgerOptions selects a Ledger page.
type LedgerOptions struct {
	Limit  int    // at most this many entries (1 to 100); 0 for the server's default, 20
	Cursor string // the previous page's NextCursor; "" for the first page
}

// Ledger returns a page of the caller's credit ledger, newest first (GET
// /credits/ledger, an optional extension). Its entries add up to the
// balance; the newest entry's BalanceAfter is the balance when the page
// was read. Page through it as through List. A bad limit or cursor gives
// an error wrapping imagegen.ErrInvalidParams.
func (c *Client) Ledger(ctx context.Context, opts LedgerOptions) (LedgerPage, error) {
	var page LedgerPage
	if err := c.getJSON(ctx, "ledger", "/credits/ledger", pageQuery(opts.Limit, opts.Cursor), &page); err != nil {
		return LedgerPage{}, err
	}
	if page.Entries == nil {
		return LedgerPage{}, errors.New("client: ledger: the answer has no entries")
	}
	return page, nil
}
