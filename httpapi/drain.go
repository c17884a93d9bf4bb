package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/drain"
)

// Drain ends every open "Prefer: wait" request early: each answers at
// once with its task as it stands, and later ones do not wait. Call it
// when the server begins to shut down, so that http.Server.Shutdown is
// not held up by long polls (up to imagegen.MaxWait each):
//
//	srv.RegisterOnShutdown(api.Drain)
//
// It is safe to call more than once and from any goroutine; the rest of
// the API keeps serving until the server stops.
func (h *Handler) Drain() { h.drained.Drain() }

// waitTask is Service.WaitTask for a request, cut short by Drain: then it
// answers with the task as it stands. It logs the wait's start at debug
// level (a test of serve's shutdown waits for that line).
func (h *Handler) waitTask(r *http.Request, owner, id string, d time.Duration) (*imagegen.Task, error) {
	return drain.Wait(r.Context(), h.drained, func(ctx context.Context) (*imagegen.Task, error) {
		h.cfg.Logger.DebugContext(ctx, "waiting for the task to end", "task_id", id, "wait", d.String())
		return h.cfg.Service.WaitTask(ctx, owner, id, d)
	}, func(ctx context.Context) (*imagegen.Task, error) {
		return h.cfg.Service.Task(ctx, owner, id)
	})
}
