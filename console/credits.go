package console

import (
	"net/http"

	"github.com/imagegen/imagegen"
)

// ledgerPageSize is how many ledger entries a credits page shows.
const ledgerPageSize = 25

// creditsData is the balance and one page of the ledger, newest first.
type creditsData struct {
	Balance int64
	Entries []imagegen.LedgerEntry
	First   bool   // the newest page
	Next    string // cursor of the older page, "" on the last
}

// creditsPage shows the balance and the ledger (Service.ListLedger),
// newest first, in pages of ledgerPageSize (?cursor= from the previous
// page's link). Each entry shows its reference and the balance after it.
func (c *Console) creditsPage(w http.ResponseWriter, r *http.Request) {
	v := viewerFrom(r.Context())
	cursor := r.URL.Query().Get("cursor")
	page, err := c.svc.ListLedger(r.Context(), v.User, ledgerPageSize, cursor)
	if c.listFailed(w, r, err, "That ledger position is not valid.") {
		return
	}
	balance, err := c.svc.Balance(r.Context(), v.User)
	if err != nil {
		c.serverError(w, r, err)
		return
	}
	d := creditsData{Balance: balance, Entries: page.Entries, First: cursor == "", Next: page.Next}
	c.renderPage(w, r, "credits", "Credits", d, notice{})
}
