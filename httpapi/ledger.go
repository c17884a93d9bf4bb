package httpapi

import (
	"net/http"
	"strings"
	"time"

	"github.com/imagegen/imagegen"
)

// LedgerEntry is one entry of GET {prefix}/credits/ledger.
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

// Ledger is the body of GET {prefix}/credits/ledger.
type Ledger struct {
	Entries []LedgerEntry `json:"entries"`
	// NextCursor, when present, fetches the next (older) page (?cursor=).
	NextCursor string `json:"next_cursor,omitempty"`
}

// handleLedger serves GET {prefix}/credits/ledger?limit=&cursor=: the
// user's credit ledger, newest first, cursor-paged like the task list.
// Its entries add up to the balance.
func (h *Handler) handleLedger() http.Handler {
	return userJSON(h, http.StatusOK, func(_ http.ResponseWriter, r *http.Request, owner string) (Ledger, error) {
		q, err := strictQuery(r.URL.RawQuery, "ledger", "limit", "cursor")
		if err != nil {
			return Ledger{}, err
		}
		limit, err := parseLimit(q)
		if err != nil {
			return Ledger{}, err
		}
		page, err := h.cfg.Service.ListLedger(r.Context(), owner, limit, q.Get("cursor"))
		if err != nil {
			return Ledger{}, err
		}
		body := Ledger{Entries: make([]LedgerEntry, len(page.Entries)), NextCursor: page.Next}
		for i, e := range page.Entries {
			body.Entries[i] = LedgerEntry{
				ID: e.ID, Kind: e.Kind, Amount: e.Amount, BalanceAfter: e.BalanceAfter,
				Reference: ledgerReference(e), CreatedAt: e.At.UTC(),
			}
		}
		return body, nil
	})
}

// ledgerReference is an entry's reference without the store's kind
// prefix ("task:", "refund:", "grant:", "web:").
func ledgerReference(e imagegen.LedgerEntry) string {
	for _, prefix := range []string{imagegen.ChargeRefPrefix, imagegen.RefundRefPrefix, string(e.Kind) + ":"} {
		if ref, ok := strings.CutPrefix(e.Ref, prefix); ok {
			return ref
		}
	}
	return e.Ref
}
