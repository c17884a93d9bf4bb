package requestctx

import (
	"context"
	"testing"
)

type otherKey struct{}

var sink context.Context // where a context escapes to, as a request's does

type logger struct{ told string }

func (l *logger) LogSubmitted(taskID, _ string, _ int64) bool { l.told = taskID; return true }

// With adds the Request in one allocation; Of finds it, the parent's
// values and cancellation pass through.
func TestWith(t *testing.T) {
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), otherKey{}, "v"))
	l := &logger{}
	ctx := With(parent, Request{ID: "req-1", Submits: l})
	r := Of(ctx)
	if r == nil || r.ID != "req-1" || r.Submits != l {
		t.Fatalf("Of gave %+v", r)
	}
	if v := ctx.Value(otherKey{}); v != "v" {
		t.Fatalf("the parent's value is %v", v)
	}
	if Of(parent) != nil {
		t.Fatal("the parent carries a Request")
	}
	cancel()
	<-ctx.Done()
	if n := testing.AllocsPerRun(100, func() { sink = With(parent, Request{ID: "req-1", Submits: l}) }); n != 1 {
		t.Fatalf("%v allocations, want 1", n)
	}
}
