package storetest

import "github.com/imagegen/imagegen"

// heldTally bounds SchedulerStats.Held from the tasks a test knows: for
// each reason, the ready tasks it may hold back (either: one of their
// reasons) and those it alone holds back (only). A store counts a task
// held for two reasons under one of them, so Held[r] lies between the
// two.
type heldTally struct{ only, either map[imagegen.HoldReason]int }

func newHeldTally() heldTally {
	return heldTally{only: map[imagegen.HoldReason]int{}, either: map[imagegen.HoldReason]int{}}
}

// add counts a ready task held back for the reasons why (none: not held).
func (h heldTally) add(why []imagegen.HoldReason) {
	for _, r := range why {
		h.either[r]++
	}
	if len(why) == 1 {
		h.only[why[0]]++
	}
}

// outside calls bad for each reason whose count in held is outside its
// bounds.
func (h heldTally) outside(held map[imagegen.HoldReason]int, bad func(r imagegen.HoldReason, n, lo, hi int)) {
	for _, r := range imagegen.HoldReasons() {
		if n := held[r]; n < h.only[r] || n > h.either[r] {
			bad(r, n, h.only[r], h.either[r])
		}
	}
}
