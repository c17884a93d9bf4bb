package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
)

// A task retried with a charge and cancelled before a worker took it
// keeps the attempt that charge was made at, so a second retry with a
// charge would reuse its ledger reference: every store refuses it
// (ErrDuplicateEntry), and the operator's page says so with a 409 and
// changes nothing, not a server error. A free retry still works.
func TestOperatorRechargeTwiceAtOneAttempt(t *testing.T) {
	hold := make(chan struct{})
	model := imagegentest.NewModel(1,
		imagegentest.Fail(&imagegen.ModelError{Provider: "scripted", Refused: true, Message: "refused"}),
		func(ctx context.Context, _ imagegen.Generation) ([]imagegen.GeneratedImage, error) {
			select { // holds its worker until the test ends
			case <-ctx.Done():
			case <-hold:
			}
			return nil, ctx.Err()
		})
	// One task of alice's at a time: while "holds" runs, the retried
	// task stays pending.
	f := newFixture(t, fixtureConfig{model: model, limits: imagegen.Limits{OwnerConcurrency: 1}})
	t.Cleanup(func() { close(hold) })
	ctx := context.Background()
	f.user(t, "alice", 5)
	failed := f.submit(t, "alice", "fails")
	if task, err := f.svc.WaitTask(ctx, "alice", failed, 10*time.Second); err != nil || task.Status != imagegen.StatusFailed {
		t.Fatalf("task %s: %+v %v; want failed", failed, task, err)
	}
	holds := f.submit(t, "alice", "holds")
	waitStatus(t, f, "alice", holds, imagegen.StatusProcessing)

	ops := f.browser(t)
	ops.signIn(f.user(t, "ops", 0))
	form := func(reason, recharge string) url.Values {
		return url.Values{"owner": {"alice"}, "reason": {reason}, "recharge": {recharge}}
	}
	retry, cancel := "/console/ops/tasks/"+failed+"/retry", "/console/ops/tasks/"+failed+"/cancel"
	if p := ops.submitForm("/console/ops?owner=alice", retry, form("provider fixed", "1")); p.status != http.StatusOK {
		t.Fatalf("retry with a charge: status %d", p.status)
	}
	if p := ops.submitForm("/console/ops?owner=alice", cancel, form("wrong prompt after all", "")); p.status != http.StatusOK {
		t.Fatalf("cancel of the pending retry: status %d", p.status)
	}
	before, _ := f.svc.Balance(ctx, "alice")
	p := ops.submitForm("/console/ops?owner=alice", retry, form("try once more", "1"))
	if p.status != http.StatusConflict || !strings.Contains(p.body, "retry it without a charge") {
		t.Fatalf("a second retry with a charge at one attempt: status %d; want 409 saying to retry without a charge", p.status)
	}
	task, err := f.svc.Task(ctx, "alice", failed)
	if err != nil || task.Status != imagegen.StatusFailed {
		t.Fatalf("after the refused retry: %+v %v; want still failed", task, err)
	}
	if after, _ := f.svc.Balance(ctx, "alice"); after != before {
		t.Fatalf("balance %d after the refused retry, want %d (nothing charged)", after, before)
	}
	if p := ops.submitForm("/console/ops?owner=alice", retry, form("try once more, free", "")); p.status != http.StatusOK {
		t.Fatalf("a free retry: status %d", p.status)
	}
}

// waitStatus waits until the owner's task has the status.
func waitStatus(t *testing.T, f *fixture, owner, id string, want imagegen.Status) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		task, err := f.svc.Task(context.Background(), owner, id)
		if err == nil && task.Status == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s: %+v %v; want %s", id, task, err, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
