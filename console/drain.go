package console

import (
	"context"
	"net/http"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/drain"
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
func (c *Console) Drain() { c.drained.Drain() }

// waitTask is Service.WaitTask for a page's request, cut short by Drain:
// then it answers with the task as it stands. wait 0 reads it now.
func (c *Console) waitTask(r *http.Request, owner, id string, wait time.Duration) (*imagegen.Task, error) {
	now := func(ctx context.Context) (*imagegen.Task, error) { return c.svc.WaitTask(ctx, owner, id, 0) }
	if wait <= 0 {
		return now(r.Context())
	}
	return drain.Wait(r.Context(), c.drained, func(ctx context.Context) (*imagegen.Task, error) {
		return c.svc.WaitTask(ctx, owner, id, wait)
	}, now)
}
