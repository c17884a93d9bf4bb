package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/imagegen/imagegen"
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
func (h *Handler) Drain() { h.stopWaits() }

// untilDrained returns ctx, cancelled also when the handler drains;
// stop releases it.
func (h *Handler) untilDrained(ctx context.Context) (_ context.Context, stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	unhook := context.AfterFunc(h.waitsDone, cancel)
	return ctx, func() { unhook(); cancel() }
}

// waitTask is Service.WaitTask for a request, cut short by Drain: then it
// answers with the task as it stands. It logs the wait's start at debug
// level (a test of serve's shutdown waits for that line).
func (h *Handler) waitTask(r *http.Request, owner, id string, d time.Duration) (*imagegen.Task, error) {
	ctx := r.Context()
	if h.waitsDone.Err() != nil {
		return h.cfg.Service.Task(ctx, owner, id)
	}
	waitCtx, stop := h.untilDrained(ctx)
	defer stop()
	h.cfg.Logger.DebugContext(ctx, "waiting for the task to end", "task_id", id, "wait", d.String())
	t, err := h.cfg.Service.WaitTask(waitCtx, owner, id, d)
	if err != nil && ctx.Err() == nil && h.waitsDone.Err() != nil {
		return h.cfg.Service.Task(ctx, owner, id) // drained, not failed
	}
	return t, err
}
