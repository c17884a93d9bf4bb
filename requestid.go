package imagegen

import "context"

type requestIDKey struct{}

// WithRequestID returns ctx carrying the id of the request being served
// (the X-Request-Id of an API call). Submit records it on the task, so
// that the task's whole life is logged with it, in any process.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestID returns the request id that ctx carries, or "".
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}
