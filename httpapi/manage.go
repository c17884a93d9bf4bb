package httpapi

import (
	"net/http"

	"github.com/imagegen/imagegen/wire"
)

// These handlers are optional extensions of the interface: a client that
// ignores them sees the core API (docs/api.md) unchanged.

// handleCancel serves POST {prefix}/tasks/{task_id}/cancel: a pending or
// processing task ends failed with error "cancelled" (error_code
// "cancelled"); the answer is the task. It is the owner's own cancel
// (Service.Cancel): a pending task is refunded, a processing one keeps
// its charge (its generation had begun, and the provider may bill for
// it). A finished task is unchanged: 409 task_already_finished.
func (h *Handler) handleCancel() http.Handler {
	return userJSON(h, http.StatusOK, func(_ http.ResponseWriter, r *http.Request, owner string) (wire.TaskBody, error) {
		id := r.PathValue("task_id")
		if err := h.cfg.Service.Cancel(r.Context(), owner, id); err != nil {
			return wire.TaskBody{}, err
		}
		t, err := h.cfg.Service.Task(r.Context(), owner, id)
		if err != nil {
			return wire.TaskBody{}, err
		}
		return h.taskBody(r, t), nil
	})
}

// handleList serves GET {prefix}/tasks?status=&limit=&cursor=&view=: the
// user's own tasks, newest first, with cursor pagination, in the basic
// or the full view.
func (h *Handler) handleList() http.Handler {
	return userJSON(h, http.StatusOK, func(_ http.ResponseWriter, r *http.Request, owner string) (wire.TaskList, error) {
		q, err := parseListQuery(r.URL.RawQuery)
		if err != nil {
			return wire.TaskList{}, err
		}
		page, err := h.cfg.Service.ListTasks(r.Context(), owner, q.status, q.limit, q.cursor)
		if err != nil {
			return wire.TaskList{}, err
		}
		tasks, err := h.taskBodies(r.Context(), r, page.Tasks, q.view)
		if err != nil {
			return wire.TaskList{}, err
		}
		return wire.TaskList{Tasks: tasks, NextCursor: page.Next}, nil
	})
}

// handleCredits serves GET {prefix}/credits: the user's balance, which
// the API and the host app's web use share.
func (h *Handler) handleCredits() http.Handler {
	return userJSON(h, http.StatusOK, func(_ http.ResponseWriter, r *http.Request, owner string) (wire.Credits, error) {
		b, err := h.cfg.Service.Balance(r.Context(), owner)
		return wire.Credits{CreditsRemaining: b}, err
	})
}
