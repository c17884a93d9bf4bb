package httpapi

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/imagegen/imagegen"
)

// View says how much of a task an answer shows, in the manner of
// resource views (Google AIP-157): ?view=basic (the default) is the
// task exactly as the interface defines it; ?view=full adds TaskDetails.
type View string

// The task views.
const (
	ViewBasic View = "basic"
	ViewFull  View = "full"
)

// TaskDetails is what the full view adds to a task (an optional
// extension; the basic view never carries it).
type TaskDetails struct {
	// CreatedAt is when the task was submitted (RFC 3339, UTC).
	CreatedAt time.Time `json:"created_at"`
	// StartedAt is when a worker first took the task; absent before.
	StartedAt *time.Time `json:"started_at,omitempty"`
	// FinishedAt is when the task reached success or failed.
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	// Model names the model that ran, or will run, the task.
	Model string `json:"model"`
	// Seed is the seed the model was given: the request's, or one drawn
	// at submit. Null when the model does not take seeds.
	Seed *int64 `json:"seed"`
	// QueuePosition, while the task is pending, is how many pending
	// tasks (of every user) are ahead of it in the work queue.
	QueuePosition *int `json:"queue_position,omitempty"`
}

// parseView reads the view parameter of a URL query ("" means basic).
// An unknown or repeated view is a *imagegen.ValidationError.
func parseView(q url.Values) (View, error) {
	vs := q["view"]
	switch {
	case len(vs) == 0:
		return ViewBasic, nil
	case len(vs) > 1:
		return "", &imagegen.ValidationError{Field: "view", Message: "must be given at most once"}
	}
	switch v := View(vs[0]); v {
	case ViewBasic, ViewFull:
		return v, nil
	}
	return "", &imagegen.ValidationError{Field: "view", Message: "must be basic or full"}
}

// detailsOf returns the full view's additions for t; position is its
// queue position, or -1 when it has none.
func detailsOf(t *imagegen.Task, position int) *TaskDetails {
	d := &TaskDetails{CreatedAt: t.CreatedAt.UTC(), Model: t.Model, Seed: t.Request.Seed}
	if !t.StartedAt.IsZero() {
		at := t.StartedAt.UTC()
		d.StartedAt = &at
	}
	if !t.FinishedAt.IsZero() && t.Status.Terminal() {
		at := t.FinishedAt.UTC()
		d.FinishedAt = &at
	}
	if position >= 0 && t.Status == imagegen.StatusPending {
		d.QueuePosition = &position
	}
	return d
}

// taskBodies renders tasks in view: the full view asks the store for the
// queue positions of the pending ones, all in one call.
func (h *Handler) taskBodies(ctx context.Context, r *http.Request, tasks []*imagegen.Task, view View) ([]TaskBody, error) {
	bodies := make([]TaskBody, len(tasks))
	for i, t := range tasks {
		bodies[i] = h.taskBody(r, t)
	}
	if view != ViewFull {
		return bodies, nil
	}
	positions, err := h.cfg.Service.QueuePositions(ctx, tasks)
	if err != nil {
		return nil, err
	}
	for i, t := range tasks {
		bodies[i].TaskDetails = detailsOf(t, positions[i])
	}
	return bodies, nil
}
