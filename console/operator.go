package console

import (
	"errors"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/imagegen/imagegen"
)

// MaxReasonChars bounds the reason an operator gives for an action.
const MaxReasonChars = 500

// opsData is the operator's look at one user: balance, recent tasks and
// keys (hints and names only).
type opsData struct {
	Owner   string
	Found   bool
	Balance int64
	Tasks   []taskView
	Keys    []imagegen.APIKey
}

// opsPage (operators only) looks up a user by owner id: their balance,
// their 20 newest tasks (with a cancel that needs a reason) and keys.
func (c *Console) opsPage(w http.ResponseWriter, r *http.Request) {
	owner := strings.TrimSpace(r.URL.Query().Get("owner"))
	c.showOps(w, r, http.StatusOK, owner, "", flash(r))
}

func (c *Console) showOps(w http.ResponseWriter, r *http.Request, status int, owner, errMsg, notice string) {
	d := opsData{Owner: owner}
	if owner != "" {
		ctx := r.Context()
		var err error
		if d.Balance, err = c.svc.Balance(ctx, owner); err != nil {
			c.serverError(w, r, err)
			return
		}
		page, err := c.svc.ListTasks(ctx, owner, "", 20, "")
		if err != nil {
			c.serverError(w, r, err)
			return
		}
		for _, t := range page.Tasks {
			d.Tasks = append(d.Tasks, c.view(t))
		}
		if d.Keys, err = c.svc.Keys(ctx, owner); err != nil {
			c.serverError(w, r, err)
			return
		}
		d.Found = len(d.Tasks) > 0 || len(d.Keys) > 0 || d.Balance != 0
	}
	c.render(w, r, status, "ops", page{Title: "Operator: users", Data: d, Error: errMsg, Message: notice})
}

// opsCancel (operators only) cancels a user's pending or processing task
// (refunded, as the owner's cancel is). The reason is required and is
// logged with the operator's name.
func (c *Console) opsCancel(w http.ResponseWriter, r *http.Request) {
	v := viewerFrom(r.Context())
	owner, id := r.PostForm.Get("owner"), r.PathValue("id")
	reason := strings.TrimSpace(r.PostForm.Get("reason"))
	if reason == "" || utf8.RuneCountInString(reason) > MaxReasonChars {
		c.showOps(w, r, http.StatusUnprocessableEntity, owner, "Give a reason (1 to 500 characters): it is logged with the action.", "")
		return
	}
	err := c.svc.Cancel(r.Context(), owner, id)
	switch {
	case errors.Is(err, imagegen.ErrTaskNotFound):
		c.notFound(w, r)
		return
	case errors.Is(err, imagegen.ErrInvalidTransition):
		c.showOps(w, r, http.StatusConflict, owner, "The task has already finished; nothing was changed.", "")
		return
	case err != nil:
		c.serverError(w, r, err)
		return
	}
	c.log.InfoContext(r.Context(), "console: operator cancelled a task", "operator", v.User, "owner", owner, "task", id, "reason", reason)
	http.Redirect(w, r, c.path("/ops?owner="+urlQueryEscape(owner)+"&done=cancelled"), http.StatusSeeOther)
}
