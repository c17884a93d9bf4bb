package console_test

import (
	"context"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/model/route"
)

// The operator page shows the last hour's provider calls by outcome and
// the fallbacks, as every worker on the store wrote them: this
// process's (a fallback chain whose first provider is down once) and
// another process's (added to the store directly).
func TestOperatorPageShowsProviderOutcomesAndFallbacks(t *testing.T) {
	down := &imagegen.ModelError{Provider: "first", Retryable: true, Message: "503"}
	chain, err := route.NewFallback("chain",
		route.Entry{Name: "first", Model: imagegentest.NewModel(1, imagegentest.Fail(down))},
		route.Entry{Name: "second", Model: imagegentest.NewModel(1)},
	)
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, fixtureConfig{model: chain})
	ops := f.browser(t)
	ops.signIn(f.user(t, "ops", 0))
	contains(t, ops.get("/console/ops"), `id="no-provider-calls"`, "No fallbacks in the last hour.")

	f.user(t, "alice", 2)
	for _, prompt := range []string{"one", "two"} { // first falls back, then first succeeds
		id := f.submit(t, "alice", prompt)
		if task, err := f.svc.WaitTask(context.Background(), "alice", id, 10*time.Second); err != nil || task.Status != imagegen.StatusSuccess {
			t.Fatalf("task %s: %+v %v; want success", prompt, task, err)
		}
	}
	if err := f.svc.FlushProviderStats(context.Background()); err != nil { // what Run does every few seconds
		t.Fatal(err)
	}
	other := imagegen.ProviderStats{
		Requests:  []imagegen.ProviderCount{{Provider: "first", Outcome: imagegen.OutcomeTimeout, N: 2}},
		Fallbacks: []imagegen.FallbackCount{{From: "first", To: "second", N: 3}},
	}
	if err := f.store.AddProviderStats(context.Background(), other); err != nil {
		t.Fatal(err)
	}

	p := ops.get("/console/ops")
	contains(t, p,
		`data-provider="first" data-outcome="success">1<`,
		`data-provider="first" data-outcome="unavailable">1<`,
		`data-provider="first" data-outcome="timeout">2<`,
		`data-provider-calls="first">4<`,
		`data-provider-success="first">25%<`,
		`data-provider="second" data-outcome="success">1<`,
		`data-provider="second" data-outcome="timeout">0<`,
		`data-provider-success="second">100%<`,
		`data-from="first" data-to="second">4<`,
	)
}
