package console

import (
	"net/http"
	"strings"
)

// opsEndSessions (operators only) ends every console session of the
// user in the form (a stolen laptop, a shared account), with a reason,
// logged like the Inspector's actions. The user's API keys keep
// working: revoking one is the user's, or the API's, to do.
func (c *Console) opsEndSessions(w http.ResponseWriter, r *http.Request) {
	v := viewerFrom(r.Context())
	owner := strings.TrimSpace(r.PostForm.Get("owner"))
	reason := strings.TrimSpace(r.PostForm.Get("reason"))
	switch {
	case owner == "":
		c.showOps(w, r, http.StatusUnprocessableEntity, owner, "Name the user whose sessions to end.", notice{})
		return
	case reason == "" || len(reason) > 500:
		c.showOps(w, r, http.StatusUnprocessableEntity, owner, "Give a reason (1 to 500 characters): it is logged with the action.", notice{})
		return
	}
	n, err := c.store.EndSessions(r.Context(), owner)
	if err != nil {
		c.serverError(w, r, err)
		return
	}
	c.log.InfoContext(r.Context(), "operator action", "action", "end console sessions", "owner", owner,
		"sessions", n, "reason", "by "+v.User+": "+reason)
	http.Redirect(w, r, c.path("/ops?owner="+urlQueryEscape(owner)+"&done=sessions-ended"), http.StatusSeeOther)
}
