package client

import (
	"context"
	"errors"
	"time"

	"github.com/imagegen/imagegen"
)

// LedgerEntry is one change of the credit balance.
type LedgerEntry struct {
	ID   string              `json:"id"`
	Kind imagegen.LedgerKind `json:"kind"` // grant, charge, refund or web
	// Amount is signed: negative for charges and web use.
	Amount       int64 `json:"amount"`
	BalanceAfter int64 `json:"balance_after"`
	// Reference is the task id of a charge or refund, and the host
	// app's reference of a grant or a web charge.
	Reference string    `json:"reference"`
	CreatedAt time.Time `json:"created_at"`
}

// LedgerPage is one page of Ledger.
type LedgerPage struct {
	Entries []LedgerEntry `json:"entries"` // newest first
	// NextCursor, when not "", is the Cursor of the next (older) page.
	NextCursor string `json:"next_cursor,omitempty"`
}

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
