// Package leases holds what the stores share about task leases: a claim
// of one task made of a claim of many, and the errors of a change fenced
// by a lease's attempt number (its fencing token).
package leases

import (
	"fmt"

	"github.com/imagegen/imagegen"
)

// First is ClaimTask made of ClaimTasks(ctx, lease, 1): its one task, or
// its error, or both: a task that came with an error (a sharded store's
// claim that leased a task it could not read in one shard, then one in
// another) is claimed, and returned with it, not dropped.
func First(tasks []*imagegen.Task, err error) (*imagegen.Task, error) {
	if len(tasks) == 0 {
		if err == nil {
			err = imagegen.ErrNoTask
		}
		return nil, err
	}
	return tasks[0], err
}

// Lost is the error of a change refused because attempt no longer holds
// task id's lease; store names the store ("redis store").
func Lost(store, id string, attempt int) error {
	return fmt.Errorf("%s: task %s attempt %d: %w", store, id, attempt, imagegen.ErrLeaseLost)
}

// Result is the outcome of a change fenced by attempt: err (named with
// store and the task) if it failed, Lost unless the attempt held the
// lease, else nil.
func Result(store, id string, attempt int, held bool, err error) error {
	switch {
	case err != nil:
		return fmt.Errorf("%s: task %s: %w", store, id, err)
	case !held:
		return Lost(store, id, attempt)
	}
	return nil
}
