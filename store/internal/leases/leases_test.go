package leases

import (
	"errors"
	"testing"

	"github.com/imagegen/imagegen"
)

func TestFirst(t *testing.T) {
	a, b := &imagegen.Task{ID: "a"}, &imagegen.Task{ID: "b"}
	if got, err := First([]*imagegen.Task{a, b}, nil); got != a || err != nil {
		t.Fatalf("First = %v, %v; want a", got, err)
	}
	if got, err := First(nil, imagegen.ErrNoTask); got != nil || !errors.Is(err, imagegen.ErrNoTask) {
		t.Fatalf("First = %v, %v; want ErrNoTask", got, err)
	}
	// A task that came with an error is claimed: returned with it.
	odd := errors.New("a task it could not read")
	if got, err := First([]*imagegen.Task{a}, odd); got != a || !errors.Is(err, odd) {
		t.Fatalf("First = %v, %v; want a with the error", got, err)
	}
}

func TestResult(t *testing.T) {
	if err := Result("x store", "t1", 2, true, nil); err != nil {
		t.Fatalf("held: %v", err)
	}
	err := Result("x store", "t1", 2, false, nil)
	if !errors.Is(err, imagegen.ErrLeaseLost) || err.Error() != "x store: task t1 attempt 2: "+imagegen.ErrLeaseLost.Error() {
		t.Fatalf("not held: %v", err)
	}
	boom := errors.New("boom")
	err = Result("x store", "t1", 2, false, boom)
	if !errors.Is(err, boom) || errors.Is(err, imagegen.ErrLeaseLost) || err.Error() != "x store: task t1: boom" {
		t.Fatalf("failed: %v", err)
	}
}
