package httpapi

import (
	"net/http"
)

// These handlers are optional extensions of the interface: a client that
// ignores them sees the core API (docs/api.md) unchanged.

// handleCancel serves POST {prefix}/tasks/{task_id}/cancel: a pending or
// processing task ends failed with error "cancelled" (error_code
// "cancelled") and is refunded; the answer is the task. A finished task
// is unchanged: 409 task_already_finished.
func (h *Handler) handleCancel() http.Handler {
	return userJSON(h, http.StatusOK, func(_ http.ResponseWriter, r *http.Request, owner string) (TaskBody, error) {
		id := r.PathValue("task_id")
		if err := h.cfg.Service.Cancel(r.Context(), owner, id); err != nil {
			return TaskBody{}, err
		}
		t, err := h.cfg.Service.Task(r.Context(), owner, id)
		if err != nil {
			return TaskBody{}, err
		}
		return h.taskBody(r, t), nil
	})
}

// TaskList is the body of GET {prefix}/tasks.
type TaskList struct {
	Tasks []TaskBody `json:"tasks"`
	// NextCursor, when present, fetches the next page (?cursor=).
	NextCursor string `json:"next_cursor,omitempty"`
}

// handleList serves GET {prefix}/tasks?status=&limit=&cursor=&view=: the
// user's own tasks, newest first, with cursor pagination, in the basic
// or the full view.
func (h *Handler) handleList() http.Handler {
	return userJSON(h, http.StatusOK, func(_ http.ResponseWriter, r *http.Request, owner string) (TaskList, error) {
		q, err := parseListQuery(r.URL.RawQuery)
		if err != nil {
			return TaskList{}, err
		}
		page, err := h.cfg.Service.ListTasks(r.Context(), owner, q.status, q.limit, q.cursor)
		if err != nil {
			return TaskList{}, err
		}
		tasks, err := h.taskBodies(r.Context(), r, page.Tasks, q.view)
		if err != nil {
			return TaskList{}, err
		}
		return TaskList{Tasks: tasks, NextCursor: page.Next}, nil
	})
}

// Credits is the body of GET {prefix}/credits.
type Credits struct {
	CreditsRemaining int64 `json:"credits_remaining"`
}

// handleCredits serves GET {prefix}/credits: the user's balance, which
// the API and the host app's web use share.
func (h *Handler) handleCredits() http.Handler {
	return userJSON(h, http.StatusOK, func(_ http.ResponseWriter, r *http.Request, owner string) (Credits, error) {
		b, err := h.cfg.Service.Balance(r.Context(), owner)
		return Credits{CreditsRemaining: b}, err
	})
}
