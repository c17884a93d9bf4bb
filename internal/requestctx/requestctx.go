// Package requestctx is what a context carries of the request being
// served (imagegen.WithRequestID, imagegen.WithRequest): its id and who
// logs its submissions. The root package reads it; a front end with a
// per-request record of its own (httpapi's) keeps a Request there and
// answers Key with it from its own context, so that a request costs no
// allocation for it.
package requestctx

import "context"

// Key is the context key of a *Request.
type Key struct{}

// Request is the value of Key.
type Request struct {
	// ID is the request id (the X-Request-Id of an API call).
	ID string
	// Submits logs the tasks submitted under the request (see
	// imagegen.SubmitLogger); nil: the service logs its own line.
	Submits interface {
		LogSubmitted(taskID, model string, cost int64) bool
	}
}

// Of returns the Request ctx carries, or nil.
func Of(ctx context.Context) *Request {
	r, _ := ctx.Value(Key{}).(*Request)
	return r
}

// With returns ctx carrying r, in one allocation (context.WithValue with
// a *Request takes two).
func With(ctx context.Context, r Request) context.Context {
	return &withRequest{Context: ctx, r: r}
}

// withRequest is a context with a Request added.
type withRequest struct {
	context.Context
	r Request
}

func (c *withRequest) Value(key any) any {
	if _, ok := key.(Key); ok {
		return &c.r
	}
	return c.Context.Value(key)
}
