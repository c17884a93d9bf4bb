package console

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/imagegen/imagegen/httpapi"
)

// Abuse bounds of a signed-in user's console sessions (web use is exempt
// from the API's per-key rate limit, but not from these). A user's
// sessions share them: signing in again opens no fresh allowance.
const (
	// DefaultSessionReads is how many pages (GET requests, the task
	// page's long-polls included) one user's sessions may read a minute
	// when Config.SessionReads is nil: two a second, sustained for a minute,
	// is more than a person clicking through the console needs.
	DefaultSessionReads = 120
	// DefaultMaxSessionWaits is how many long waits (?wait= on
	// /api/tasks/{id}, what a task page holds open while it follows its
	// task) one user's sessions may hold at once in one process when
	// Config.MaxSessionWaits is zero.
	DefaultMaxSessionWaits = 10
	// waitRetryAfter is the Retry-After of a wait refused for having too
	// many open: one of them will likely have answered by then.
	waitRetryAfter = 2 * time.Second
)

// boundsKey names v in the abuse bounds: the user, whose every session
// (each key sign-in, or the host app's session through Identify)
// shares one read budget and one allowance of waits. Per session, a
// user could sign in again and again with their key for fresh ones.
func (v viewer) boundsKey() string {
	return "user:" + v.User
}

// overReadBudget counts one read of v's sessions against
// Config.SessionReads; beyond the budget it answers 429 with Retry-After
// (JSON on the JSON routes) and reports true. A limiter that fails lets
// the read through (logged): the bound guards against abuse, and the
// pages cannot work without the store anyway.
func (c *Console) overReadBudget(w http.ResponseWriter, r *http.Request, v viewer) bool {
	res, err := c.cfg.SessionReads.Allow(r.Context(), v.boundsKey())
	if err != nil {
		c.log.WarnContext(r.Context(), "console: session read budget", "err", err)
		return false
	}
	if res.Allowed {
		return false
	}
	wait := httpapi.RetryAfterSeconds(res.RetryAfter)
	c.tooMany(w, r, wait, fmt.Sprintf("Too many page reads from your console sessions: the console allows %d a %s. Try again in %ds.", res.Limit, res.Window, wait))
	return true
}

// tooMany answers 429 with Retry-After (seconds) and msg: JSON on the
// JSON routes, else the message page, with the viewer known.
func (c *Console) tooMany(w http.ResponseWriter, r *http.Request, retryAfter int64, msg string) {
	w.Header().Set("Retry-After", strconv.FormatInt(retryAfter, 10))
	if isAPIPath(c, r) {
		writeJSON(w, http.StatusTooManyRequests, map[string]string{"error": msg})
		return
	}
	c.render(w, r, http.StatusTooManyRequests, "message", page{Title: "Too many requests", Error: msg})
}
