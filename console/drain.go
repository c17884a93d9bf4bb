package console

import (
	"context"
	"net/http"
	"time"

	"github.com/imagegen/imagegen"
)

// Drain ends every open long-poll of a task page early: each answers at
// once with its task as it stands, and later ones do not wait. Call it
// when the server begins to shut down, beside the API's Drain, so that
// http.Server.Shutdown is not held up by open task pages (up to 25 s
// each):
//
//	srv.RegisterOnShutdown(con.Drain)
//
// It is safe to call more than once and from any goroutine; the rest of
// the console keeps serving until the server stops.
func (c *Console) Drain() { c.stopWaits() }

// waitTask is Service.WaitTask for a page's request, cut short by Drain:
// then it answers with the task as it stands. wait 0 reads it now.
func (c *Console) waitTask(r *http.Request, owner, id string, wait time.Duration) (*imagegen.Task, error) {
	ctx := r.Context()
	if wait <= 0 || c.waitsDone.Err() != nil {
		return c.svc.WaitTask(ctx, owner, id, 0)
	}
	waitCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(c.waitsDone, cancel)()
	t, err := c.svc.WaitTask(waitCtx, owner, id, wait)
	if err != nil && ctx.Err() == nil && c.waitsDone.Err() != nil {
		return c.svc.WaitTask(ctx, owner, id, 0) // drained, not failed
	}
	return t, err
}
