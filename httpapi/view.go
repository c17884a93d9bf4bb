package httpapi

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/wire"
)

// View says how much of a task an answer shows, in the manner of
// resource views (Google AIP-157): ?view=basic (the default) is the
// task exactly as the interface defines it; ?view=full adds wire.TaskDetails.
type View string

// The task views.
const (
	ViewBasic View = "basic"
	ViewFull  View = "full"
)

// viewOf reads the view of a request; a request without a query (the
// common poll) is basic without parsing one.
func viewOf(r *http.Request) (View, error) {
	if r.URL.RawQuery == "" {
		return ViewBasic, nil
	}
	return parseView(r.URL.Query())
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
// queue position, or -1 when it has none, and start its estimated start
// (zero for none).
func detailsOf(t *imagegen.Task, position int, start time.Time) *wire.TaskDetails {
	d := &wire.TaskDetails{CreatedAt: wire.Time(t.CreatedAt), StartedAt: wire.OptionalTime(t.StartedAt), Model: t.Model, Seed: t.Request.Seed}
	if t.Status.Terminal() {
		d.FinishedAt = wire.OptionalTime(t.FinishedAt)
	}
	if position >= 0 && t.Status == imagegen.StatusPending {
		d.QueuePosition = &position
		d.EstimatedStartAt = wire.OptionalTime(start)
	}
	if t.Status == imagegen.StatusProcessing && t.Progress > 0 {
		p := t.Progress
		d.Progress = &p
	}
	return d
}

// taskBodies renders tasks in view: the full view asks the store for the
// queue positions of the pending ones, all in one call.
func (h *Handler) taskBodies(ctx context.Context, r *http.Request, tasks []*imagegen.Task, view View) ([]wire.TaskBody, error) {
	bodies := make([]wire.TaskBody, len(tasks))
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
	starts := h.cfg.Service.EstimatedStarts(ctx, positions)
	for i, t := range tasks {
		bodies[i].TaskDetails = detailsOf(t, positions[i], starts[i])
	}
	return bodies, nil
}
