package storetest

import (
	"testing"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/store/storekit"
)

// testListScanIsBounded: a page of ListTasks with a status filter reads
// at most storekit.ListScan(limit) of the owner's tasks. A filter that
// matches little (status=failed over an owner's thousands of successes)
// then answers a short page, even an empty one, with a Next cursor that
// goes on where the read stopped, instead of reading the owner's whole
// list on every request: an owner who lists such a filter again and
// again would otherwise cost the store a read of every task it keeps,
// each time (in memory, under the lock every other owner's submits,
// claims and polls wait for). Paging on with Next finds every match.
func testListScanIsBounded(t *testing.T, h Harness) {
	s := h.Store
	const limit = 1
	newer := storekit.ListScan(limit) + 20 // more than one page reads
	grant(t, s, "u", int64(newer+1))
	old := submit(t, s, "u", 1)
	c := claim(t, s)
	if c.ID != old.ID {
		t.Fatalf("claimed %s, want %s", c.ID, old.ID)
	}
	if err := errOf(s.FailTask(ctx, c.ID, c.Attempt, fail("no"))); err != nil {
		t.Fatalf("fail: %v", err)
	}
	submitApart(t, h, "u", newer)

	first, err := s.ListTasks(ctx, "u", imagegen.StatusFailed, limit, "")
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if len(first.Tasks) != 0 || first.Next == "" {
		t.Fatalf("the first page of status=failed over %d newer pending tasks holds %d tasks, next %q: it read more than storekit.ListScan(%d) = %d tasks",
			newer, len(first.Tasks), first.Next, limit, storekit.ListScan(limit))
	}
	var got []string
	cursor := first.Next
	for pages := 1; cursor != ""; pages++ {
		if pages > newer {
			t.Fatalf("still paging after %d pages", pages)
		}
		page, err := s.ListTasks(ctx, "u", imagegen.StatusFailed, limit, cursor)
		if err != nil {
			t.Fatalf("list (cursor %q): %v", cursor, err)
		}
		for _, task := range page.Tasks {
			if task.Status != imagegen.StatusFailed {
				t.Fatalf("status=failed listed %s, %s", task.ID, task.Status)
			}
			got = append(got, task.ID)
		}
		cursor = page.Next
	}
	if len(got) != 1 || got[0] != old.ID {
		t.Fatalf("paging through status=failed found %v, want [%s]", got, old.ID)
	}
}
