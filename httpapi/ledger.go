package httpapi

import (
	"net/http"

	"github.com/imagegen/imagegen/wire"
)

// handleLedger serves GET {prefix}/credits/ledger?limit=&cursor=: the
// user's credit ledger, newest first, cursor-paged like the task list.
// Its entries add up to the balance.
func (h *Handler) handleLedger() http.Handler {
	return userJSON(h, http.StatusOK, func(_ http.ResponseWriter, r *http.Request, owner string) (wire.Ledger, error) {
		q, err := strictQuery(r.URL.RawQuery, "ledger", "limit", "cursor")
		if err != nil {
			return wire.Ledger{}, err
		}
		limit, err := parseLimit(q)
		if err != nil {
			return wire.Ledger{}, err
		}
		page, err := h.cfg.Service.ListLedger(r.Context(), owner, limit, q.Get("cursor"))
		if err != nil {
			return wire.Ledger{}, err
		}
		body := wire.Ledger{Entries: make([]wire.LedgerEntry, len(page.Entries)), NextCursor: page.Next}
		for i, e := range page.Entries {
			body.Entries[i] = wire.LedgerEntry{
				ID: e.ID, Kind: e.Kind, Amount: e.Amount, BalanceAfter: e.BalanceAfter,
				Reference: e.Reference(), CreatedAt: wire.Time(e.At),
			}
		}
		return body, nil
	})
}
