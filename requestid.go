package imagegen

import (
	"context"

	"github.com/imagegen/imagegen/internal/requestctx"
)

// WithRequestID returns ctx carrying the id of the request being served
// (the X-Request-Id of an API call). Submit records it on the task, so
// that the task's whole life is logged with it, in any process.
func WithRequestID(ctx context.Context, id string) context.Context {
	return requestctx.With(ctx, requestctx.Request{ID: id})
}

// WithRequest is WithRequestID with the submissions of the request
// logged by submits: a task submitted under the returned context is
// reported to submits, and the service writes its own "task submitted"
// line only if submits declines it. A front end that writes one line per
// request (httpapi's request line) puts the task there, so that a submit
// costs one log line, not two.
func WithRequest(ctx context.Context, id string, submits SubmitLogger) context.Context {
	return requestctx.With(ctx, requestctx.Request{ID: id, Submits: submits})
}

// SubmitLogger logs the tasks submitted under a request in place of the
// service's "task submitted" line (WithRequest).
type SubmitLogger interface {
	// LogSubmitted is told of a task just created: its id, model and
	// cost. It reports whether it logs them (a line of its own that
	// carries the task id and the request id); false, and the service
	// writes its "task submitted" line as without a SubmitLogger.
	LogSubmitted(taskID, model string, cost int64) bool
}

// RequestID returns the request id that ctx carries, or "".
func RequestID(ctx context.Context) string {
	if r := requestctx.Of(ctx); r != nil {
		return r.ID
	}
	return ""
}

// submitLogged tells the SubmitLogger of ctx's request, if any, of t and
// reports whether it logs t.
func submitLogged(ctx context.Context, t *Task) bool {
	r := requestctx.Of(ctx)
	return r != nil && r.Submits != nil && r.Submits.LogSubmitted(t.ID, t.Model, t.Cost)
}
