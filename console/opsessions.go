package console

import (
	"net/http"
	"strings"

	"github.com/imagegen/imagegen/internal/pgtext"
)

// opsEndSessions (operators only) ends every console session of the
// user in the form (a stolen laptop, a shared account), with a reason,
// logged like the Inspector's actions. The user's API keys keep
// working: revoking one is the user's, or the API's, to do.
func (c *Console) opsEndSessions(w http.ResponseWriter, r *http.Request) {
	owner := strings.TrimSpace(r.PostForm.Get("owner"))
	if owner == "" {
		c.showOps(w, r, http.StatusUnprocessableEntity, owner, "Name the user whose sessions to end.", notice{})
		return
	}
	if !pgtext.Storable(owner) { // names nobody (and PostgreSQL refuses it)
		c.showOps(w, r, http.StatusUnprocessableEntity, "", "No user has that name (it is not valid UTF-8, or holds NUL); nothing was changed.", notice{})
		return
	}
	reason, ok := c.opsReason(w, r, owner)
	if !ok {
		return
	}
	n, err := c.store.EndSessions(r.Context(), owner)
	if err != nil {
		c.serverError(w, r, err)
		return
	}
	c.log.InfoContext(r.Context(), "operator action", "action", "end console sessions", "owner", owner,
		"sessions", n, "reason", reason)
	http.Redirect(w, r, c.path("/ops?owner="+urlQueryEscape(owner)+"&done=sessions-ended"), http.StatusSeeOther)
}
