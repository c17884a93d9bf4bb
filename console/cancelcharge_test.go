package console_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/imagegen/imagegen"
)

// The console's cancel button is the user's own cancel: a task whose
// generation has begun keeps its charge, one still queued is refunded.
func TestCancelButtonKeepsAStartedCharge(t *testing.T) {
	f := newHoldingFixtureWith(t, imagegen.Limits{OwnerConcurrency: 1}) // bob's second task waits for his first
	b := f.browser(t)
	b.signIn(f.user(t, "bob", 3))
	running := f.submit(t, "bob", "a long one") // the scripted model's price: 1
	f.awaitProcessing(t, "bob", running)
	queued := f.submit(t, "bob", "behind it")
	balance := func() int64 {
		t.Helper()
		bal, err := f.svc.Balance(context.Background(), "bob")
		if err != nil {
			t.Fatal(err)
		}
		return bal
	}
	for _, c := range []struct {
		id   string
		want int64 // the balance after its cancel
	}{{queued, 2}, {running, 2}} { // 3 - 1 - 1; the queued task's credit back, the running one's kept
		// (the queued one first: the running one's cancel frees bob's
		// one slot, which a worker would give the queued one)
		p := b.submitForm("/console/tasks/"+c.id, "/console/tasks/"+c.id+"/cancel", nil)
		if p.status != http.StatusOK {
			t.Fatalf("cancel %s: status %d", c.id, p.status)
		}
		task, err := f.svc.Task(context.Background(), "bob", c.id)
		if err != nil || task.Status != imagegen.StatusFailed || task.ErrorCode != imagegen.CodeCancelled {
			t.Fatalf("task after the user's cancel: %+v %v; want failed, cancelled", task, err)
		}
		if got := balance(); got != c.want {
			t.Fatalf("balance after cancelling %s: %d, want %d", c.id, got, c.want)
		}
	}
}

// The notice after the user's cancel says what came of the charge: back
// in the balance for a queued task, kept for one whose generation had
// begun (where it said "back in the balance" for both).
func TestCancelNoticeSaysWhetherTheChargeCameBack(t *testing.T) {
	f := newHoldingFixtureWith(t, imagegen.Limits{OwnerConcurrency: 1})
	b := f.browser(t)
	b.signIn(f.user(t, "bob", 3))
	running := f.submit(t, "bob", "a long one")
	f.awaitProcessing(t, "bob", running)
	queued := f.submit(t, "bob", "behind it")
	const back, kept = "What it cost is back in the balance.", "Its generation had begun, so what it cost stays spent."
	for _, c := range []struct {
		id        string
		want, not string
	}{{queued, back, kept}, {running, kept, back}} {
		p := b.submitForm("/console/tasks/"+c.id, "/console/tasks/"+c.id+"/cancel", nil)
		if p.status != http.StatusOK {
			t.Fatalf("cancel %s: status %d", c.id, p.status)
		}
		if !strings.Contains(p.body, c.want) || strings.Contains(p.body, c.not) {
			t.Errorf("the page after cancelling %s says %q; want %q and not %q",
				c.id, regexp.MustCompile(`id="notice">[^<]*`).FindString(p.body), c.want, c.not)
		}
	}
}
