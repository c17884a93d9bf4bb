package imagegen

import (
	"errors"
	"fmt"
)

// ErrPartialClaim: a claim of a store spread over several parts (the
// shards of a sharded Redis store) took tasks from some parts, then
// could not ask another. See PartialClaimError.
var ErrPartialClaim = errors.New("imagegen: a claim could not ask part of the store")

// PartialClaimError is what Store.ClaimTasks returns, along with the
// tasks it claimed, when a part of the store it asked after others had
// given tasks failed: the error is not dropped with the tasks, nor the
// tasks with the error (dropped, they would stay leased to no one until
// their leases ran out, an attempt used up). The tasks returned with it
// are claimed and must be run. When the part's failure leaves unknown
// whether its claim ran (a connection lost after the command was
// written, asked again without an answer), the tasks it may have leased
// stay leased until their leases run out and RecoverExpired takes them
// back. errors.Is(err, ErrPartialClaim) holds, and errors.Is and As see
// Err.
type PartialClaimError struct {
	Part string // the part that failed (on Redis, the shard's hash tag)
	Err  error  // why it failed
}

func (e *PartialClaimError) Error() string {
	return fmt.Sprintf("%v: %s: %v", ErrPartialClaim, e.Part, e.Err)
}

// Is makes errors.Is(err, ErrPartialClaim) hold.
func (e *PartialClaimError) Is(target error) bool { return target == ErrPartialClaim }

// Unwrap returns why the part failed.
func (e *PartialClaimError) Unwrap() error { return e.Err }
