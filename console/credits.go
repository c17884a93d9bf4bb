package console

import (
	"net/http"
	"strconv"

	"github.com/imagegen/imagegen"
)

// ledgerPageSize is how many ledger entries a credits page shows.
const ledgerPageSize = 25

// creditsData is the balance and one page of the ledger, newest first.
type creditsData struct {
	Balance  int64
	Entries  []imagegen.LedgerEntry
	Page     int
	PrevPage int // 0 when on the first page
	NextPage int // 0 when on the last page
}

// creditsPage shows the balance and the ledger, newest first, in pages of
// ledgerPageSize (?page=2 ...).
func (c *Console) creditsPage(w http.ResponseWriter, r *http.Request) {
	v := viewerFrom(r.Context())
	n := 1
	if p := r.URL.Query().Get("page"); p != "" {
		var err error
		if n, err = strconv.Atoi(p); err != nil || n < 1 {
			c.render(w, r, http.StatusBadRequest, "message", pageMsg("Bad request", "The page number must be a positive number."))
			return
		}
	}
	balance, err := c.svc.Balance(r.Context(), v.User)
	if err != nil {
		c.serverError(w, r, err)
		return
	}
	ledger, err := c.svc.Ledger(r.Context(), v.User) // oldest first
	if err != nil {
		c.serverError(w, r, err)
		return
	}
	d := creditsData{Balance: balance, Page: n}
	end := len(ledger) - (n-1)*ledgerPageSize // exclusive, counting from the newest
	for i := end - 1; i >= 0 && i >= end-ledgerPageSize; i-- {
		d.Entries = append(d.Entries, ledger[i])
	}
	if n > 1 {
		d.PrevPage = n - 1
	}
	if end-ledgerPageSize > 0 {
		d.NextPage = n + 1
	}
	c.renderPage(w, r, "credits", "Credits", d, "")
}
