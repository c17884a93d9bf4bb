package imagegen

import (
	"errors"
	"fmt"
	"strings"
)

// ErrUnreadableTask: a store claimed a task but could not read it back
// (a stored value it cannot decode: corrupted, or written by something
// other than this library). See UnreadableTasksError.
var ErrUnreadableTask = errors.New("imagegen: a claimed task could not be read")

// UnreadableTask is one task a claim leased but could not read.
type UnreadableTask struct {
	ID      string // "" when not even the id could be read
	Model   string
	Attempt int   // the claim's attempt, the fencing token it failed the task with
	Err     error // why it could not be read

	// Failed reports that the store failed the task at once
	// (CodeInternal, UnreadableTaskMessage) and refunded Refund credits:
	// its data will not mend itself, and every claim of it would cost
	// an attempt and a lease period for nothing. When failing it failed
	// too (FailErr), the task stays leased until RecoverExpired takes it
	// back, which fails and refunds it after MaxAttempts.
	Failed  bool
	Refund  int64
	FailErr error
}

// UnreadableTaskMessage is the Failure.Message of a task failed because
// a claim could not read it.
const UnreadableTaskMessage = "the task's stored data could not be read"

// UnreadableTasksError is what Store.ClaimTasks returns, along with the
// tasks it could read, when it leased tasks it could not read: one such
// task does not cost the others their claim (dropped, they would stay
// leased to no one until their leases ran out, an attempt used up each
// time the bad one came back in their batch). The tasks returned with it
// are claimed and must be run. errors.Is(err, ErrUnreadableTask) holds.
type UnreadableTasksError struct {
	Tasks []UnreadableTask
}

func (e *UnreadableTasksError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v: %d task(s):", ErrUnreadableTask, len(e.Tasks))
	for _, t := range e.Tasks {
		fmt.Fprintf(&b, " %s (attempt %d): %v", t.ID, t.Attempt, t.Err)
		switch {
		case t.Failed:
			b.WriteString(" [failed and refunded];")
		default:
			fmt.Fprintf(&b, " [left leased until its lease expires: failing it failed: %v];", t.FailErr)
		}
	}
	return strings.TrimSuffix(b.String(), ";")
}

// Is makes errors.Is(err, ErrUnreadableTask) hold.
func (e *UnreadableTasksError) Is(target error) bool { return target == ErrUnreadableTask }

// Unwrap returns why each task could not be read.
func (e *UnreadableTasksError) Unwrap() []error {
	errs := make([]error, 0, len(e.Tasks))
	for _, t := range e.Tasks {
		errs = append(errs, t.Err)
	}
	return errs
}
