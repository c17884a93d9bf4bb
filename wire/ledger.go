package wire

import (
	"time"

	"github.com/imagegen/imagegen"
)

// LedgerEntry is one entry of GET /api/v1/credits/ledger.
type LedgerEntry struct {
	ID   string              `json:"id"`
	Kind imagegen.LedgerKind `json:"kind"` // grant, charge, refund or web
	// Amount is signed: negative for charges and web use.
	Amount       int64 `json:"amount"`
	BalanceAfter int64 `json:"balance_after"`
	// Reference is the task id of a charge or refund, and the reference
	// the host app gave a grant or a web charge.
	Reference string    `json:"reference"`
	CreatedAt time.Time `json:"created_at"`
}

// Ledger is the body of GET /api/v1/credits/ledger.
type Ledger struct {
	Entries []LedgerEntry `json:"entries"`
	// NextCursor, when present, fetches the next (older) page (?cursor=).
	NextCursor string `json:"next_cursor,omitempty"`
}
