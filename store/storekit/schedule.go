package storekit

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/imagegen/imagegen"
)

// CheckOwnerWeight is what SetOwnerWeight requires: an owner and a
// weight within 1..imagegen.MaxOwnerWeight.
func CheckOwnerWeight(owner string, weight int) error {
	switch {
	case owner == "":
		return fmt.Errorf("%w: a weight needs an owner", ErrInvalidStoreInput)
	case weight < 1 || weight > imagegen.MaxOwnerWeight:
		return fmt.Errorf("%w: owner weight must be within 1..%d (got %d)", ErrInvalidStoreInput, imagegen.MaxOwnerWeight, weight)
	}
	return nil
}

// Stride is how far one task moves the fair-share tag of an owner of
// weight w: imagegen.TagStride/w (a weight out of range counts as 1).
func Stride(weight int) int64 {
	if weight < 1 || weight > imagegen.MaxOwnerWeight {
		weight = 1
	}
	return imagegen.TagStride / int64(weight)
}

// QueueBase is the virtual time a task queued for a model is tagged
// from (docs/scheduling.md): v, the store's, unless the model's queue
// is behind it (held back while other models ran: paused, at its cap,
// waiting for its rate), when it is one less than the tag at the
// model's head, so that an owner's first task there waits behind one
// turn of the owners queued there, not behind their whole backlog.
// head is the tag of the first task in the model's queue of tasks that
// are neither parked nor delayed; ok is false when that queue is empty.
func QueueBase(v, head int64, ok bool) int64 {
	if ok && head < v {
		return head - 1
	}
	return v
}

// SortBusiest sorts loads most pending first (then by owner) and keeps
// the first imagegen.BusiestOwners, as SchedulerStats.Busiest lists them.
func SortBusiest(loads []imagegen.OwnerLoad) []imagegen.OwnerLoad {
	slices.SortFunc(loads, func(a, b imagegen.OwnerLoad) int {
		return cmp.Or(cmp.Compare(b.Pending, a.Pending), cmp.Compare(a.Owner, b.Owner))
	})
	return loads[:min(len(loads), imagegen.BusiestOwners)]
}
