package console_test

import (
	"context"
	"regexp"
	"slices"
	"strconv"
	"strings"
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

// chartOf returns the SVG of the operator page's chart id.
func chartOf(t *testing.T, p page, id string) string {
	t.Helper()
	m := regexp.MustCompile(`(?s)<figure class="chart" id="` + id + `">.*?</figure>`).FindString(p.body)
	if m == "" || !strings.Contains(m, "<svg") {
		t.Fatalf("the operator page has no chart %s", id)
	}
	return m
}

// sumBars adds up the bars of series in a chart.
func sumBars(chart, series string) int {
	n := 0
	for _, m := range regexp.MustCompile(`data-series="`+series+`" data-n="(\d+)"`).FindAllStringSubmatch(chart, -1) {
		v, _ := strconv.Atoi(m[1])
		n += v
	}
	return n
}

// seriesValues returns the data-values of a chart's line of class series.
func seriesValues(t *testing.T, chart, series string) []string {
	t.Helper()
	m := regexp.MustCompile(`class="line ` + series + `[^"]*" points="[^"]*" data-values="([^"]*)"`).FindStringSubmatch(chart)
	if m == nil {
		t.Fatalf("no values of %s in %s", series, chart)
	}
	return strings.Split(m[1], ",")
}

// The operator page draws the last hour as SVG charts (no script):
// tasks finished per minute by how, generation time p50/p95, queue
// depth; drawn from the tasks in the store.
func TestOperatorPageChartsTheLastHour(t *testing.T) {
	refused := &imagegen.ModelError{Provider: "scripted", Refused: true, Message: "refused"}
	f := newFixture(t, fixtureConfig{model: imagegentest.NewModel(1, imagegentest.Fail(refused), imagegentest.Fail(refused))})
	f.user(t, "alice", 5)
	for _, prompt := range []string{"one", "two", "three"} { // two refused, then a success
		id := f.submit(t, "alice", prompt)
		if _, err := f.svc.WaitTask(context.Background(), "alice", id, 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	ops := f.browser(t)
	ops.signIn(f.user(t, "ops", 0))
	p := ops.get("/console/ops")
	if n := strings.Count(p.body, "<svg"); n < 2 {
		t.Fatalf("the operator page has %d SVG charts, want at least 2", n)
	}
	if strings.Contains(p.body, "<script>") {
		t.Error("the charts need an inline script")
	}
	finished := chartOf(t, p, "chart-finished")
	if ok, bad, off := sumBars(finished, "ok"), sumBars(finished, "bad"), sumBars(finished, "off"); ok != 1 || bad != 2 || off != 0 {
		t.Errorf("finished bars: %d succeeded, %d failed, %d cancelled; want 1, 2, 0", ok, bad, off)
	}
	p50 := seriesValues(t, chartOf(t, p, "chart-generation"), "p50")
	if len(p50) != 60 || slices.IndexFunc(p50, func(v string) bool { return v != "" }) < 0 {
		t.Errorf("p50 values %v: want 60 minutes, one with the success's time", p50)
	}
	pending := seriesValues(t, chartOf(t, p, "chart-queue"), "pending")
	if len(pending) != 60 || pending[59] != "0" {
		t.Errorf("pending values %v: want 60 minutes ending at 0", pending)
	}

	// Tasks that wait or run show in the queue's last minute, as the live queue has them.
	h := newHoldingFixture(t)
	h.user(t, "bob", 5)
	for range 3 {
		h.submit(t, "bob", "a long one")
	}
	hops := h.browser(t)
	hops.signIn(h.user(t, "ops", 0))
	queue := chartOf(t, hops.get("/console/ops"), "chart-queue")
	last := func(series string) int {
		v := seriesValues(t, queue, series)
		n, _ := strconv.Atoi(v[len(v)-1])
		return n
	}
	// A worker may take one up meanwhile, so the two are checked together.
	if p, r := last("pending"), last("processing"); p+r != 3 {
		t.Errorf("the queue chart ends at %d pending and %d processing; want 3 in all, as the queue holds", p, r)
	}
}

// The operator page shows which caps hold tasks back and the busiest
// users in the queue.
func TestOperatorPageShowsTheScheduler(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	model := imagegentest.NewModel(1, imagegentest.Block(started, release))
	f := newFixture(t, fixtureConfig{model: model, limits: imagegen.Limits{OwnerConcurrency: 1}})
	ops := f.browser(t)
	ops.signIn(f.user(t, "ops", 0))
	f.user(t, "alice", 3)
	for _, prompt := range []string{"one", "two", "three"} {
		f.submit(t, "alice", prompt)
	}
	<-started // one runs; the cap of one a user holds the other two back
	contains(t, ops.get("/console/ops"),
		`data-reason="owner_cap">2<`,
		`data-reason="model_cap">0<`,
		`<a href="?owner=alice">alice</a></td><td class="num" data-label="Pending">2</td><td class="num" data-label="Running">1</td>`)
}
