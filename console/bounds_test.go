package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/console"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv"
)

// newHoldingFixture is the fixture with a model that runs every
// generation (of the first hundred) until it is cancelled or the test
// ends, so tasks stay processing while a test looks at them.
func newHoldingFixture(t *testing.T) *fixture { return newHoldingFixtureWith(t, imagegen.Limits{}) }

// newHoldingFixtureWith is newHoldingFixture whose workers keep limits.
func newHoldingFixtureWith(t *testing.T, limits imagegen.Limits) *fixture {
	hold := make(chan struct{})
	step := func(ctx context.Context, _ imagegen.Generation) ([]imagegen.GeneratedImage, error) {
		select {
		case <-ctx.Done():
		case <-hold:
		}
		return nil, ctx.Err()
	}
	f := newFixture(t, fixtureConfig{model: imagegentest.NewModel(1, slices.Repeat([]imagegentest.Step{step}, 100)...), limits: limits})
	t.Cleanup(func() { close(hold) }) // before the fixture's cleanup, which waits for the workers
	return f
}

// awaitProcessing waits for a worker to take the owner's task up, and
// returns the task as it is then.
func (f *fixture) awaitProcessing(t *testing.T, owner, id string) *imagegen.Task {
	t.Helper()
	var task *imagegen.Task
	testenv.EventuallyNoError(t, 10*time.Second, "a worker to take up task "+id, func() error {
		tk, err := f.svc.Task(context.Background(), owner, id)
		if err != nil {
			return err
		}
		if tk.Status != imagegen.StatusProcessing {
			return fmt.Errorf("status %s", tk.Status)
		}
		task = tk
		return nil
	})
	return task
}

// One user's sessions hold at most DefaultMaxSessionWaits long waits at
// once: of 20 sent together from two sessions of one key (a second
// sign-in opens no fresh allowance), 10 wait (until the task ends) and
// 10 are refused at once with 429, Retry-After and a JSON body.
func TestOneUserHoldsAtMostTenWaits(t *testing.T) {
	f := newHoldingFixture(t)
	key := f.user(t, "alice", 1)
	b, other := f.browser(t), f.browser(t)
	b.signIn(key)
	other.signIn(key)
	id := f.submit(t, "alice", "a long one")
	wait := "/console/api/tasks/" + id + "?wait=25"

	const sent = 2 * console.DefaultMaxSessionWaits
	answers := make(chan page, sent)
	var wg sync.WaitGroup
	for i := range sent {
		from := b
		if i%2 == 1 {
			from = other
		}
		wg.Add(1)
		go func() { defer wg.Done(); answers <- from.get(wait) }()
	}
	refused := 0
	for range sent - console.DefaultMaxSessionWaits { // the refusals come at once; the waits hold
		p := <-answers
		if p.status != http.StatusTooManyRequests {
			t.Fatalf("a wait answered %d before the task ended, want 429 (only %d refused so far)", p.status, refused)
		}
		if p.header.Get("Retry-After") == "" || !strings.HasPrefix(p.header.Get("Content-Type"), "application/json") || !json.Valid([]byte(p.body)) {
			t.Errorf("429: Retry-After %q, Content-Type %q, body %q; want a Retry-After and JSON", p.header.Get("Retry-After"), p.header.Get("Content-Type"), p.body)
		}
		refused++
	}
	if err := f.svc.Cancel(context.Background(), "alice", id); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(answers)
	for p := range answers {
		if p.status != http.StatusOK || !strings.Contains(p.body, `"status":"failed"`) {
			t.Errorf("a held wait: %d %s, want 200 with the cancelled task", p.status, p.body)
		}
	}
	// The slots are free again.
	if p := b.get("/console/api/tasks/" + id + "?wait=1"); p.status != http.StatusOK {
		t.Errorf("a wait after the others ended: status %d, want 200", p.status)
	}
}

// Drain (serve calls it as it begins to shut down) answers a task
// page's open long-poll at once, with the task as it stands, where it
// held the server's shutdown for up to 25 s; a long-poll that comes
// after does not wait either.
func TestDrainAnswersOpenWaits(t *testing.T) {
	f := newHoldingFixture(t)
	key := f.user(t, "alice", 1)
	b := f.browser(t)
	b.signIn(key)
	id := f.submit(t, "alice", "a long one")
	f.awaitProcessing(t, "alice", id)
	wait := "/console/api/tasks/" + id + "?wait=25"
	answer := make(chan page, 1)
	go func() { answer <- b.get(wait) }()
	time.Sleep(200 * time.Millisecond) // let the wait begin (if it has not, it must not wait either)
	f.con.Drain()
	for _, p := range []func() page{func() page { return <-answer }, func() page { return b.get(wait) }} {
		got := make(chan page, 1)
		go func() { got <- p() }()
		select {
		case p := <-got:
			if p.status != http.StatusOK || !strings.Contains(p.body, `"status":"processing"`) {
				t.Errorf("a drained wait: %d %s, want 200 with the task still processing", p.status, p.body)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a long-poll still waits after Drain")
		}
	}
}

// A user's page reads have a budget (DefaultSessionReads a minute):
// beyond it pages answer 429 with Retry-After, the JSON endpoint in
// JSON. Every session of the user shares it (signing in again opens no
// fresh budget); another user is not affected, and a sign-out still
// works.
func TestSessionReadBudget(t *testing.T) {
	f := newFixture(t, fixtureConfig{})
	key := f.user(t, "alice", 1)
	id := f.submit(t, "alice", "a cat")
	b, other := f.browser(t), f.browser(t)
	// The sign-in lands on the playground (one read), then the keys page.
	b.signIn(key)
	csrf := csrfField.FindStringSubmatch(b.get("/console/keys").body)[1]
	reads := 2
	for ; reads < console.DefaultSessionReads; reads++ {
		if p := b.get("/console/credits"); p.status != http.StatusOK {
			t.Fatalf("read %d of a budget of %d: status %d", reads+1, console.DefaultSessionReads, p.status)
		}
	}
	p := b.get("/console/tasks")
	if p.status != http.StatusTooManyRequests || p.header.Get("Retry-After") == "" {
		t.Fatalf("read %d: status %d, Retry-After %q; want 429 with Retry-After", reads+1, p.status, p.header.Get("Retry-After"))
	}
	contains(t, p, `class="alert"`, "Too many page reads")
	p = b.get("/console/api/tasks/" + id)
	if p.status != http.StatusTooManyRequests || !strings.HasPrefix(p.header.Get("Content-Type"), "application/json") {
		t.Fatalf("the JSON endpoint over budget: %d %s, want a JSON 429", p.status, p.header.Get("Content-Type"))
	}
	// A fresh session of the same key: the sign-in goes through, and its
	// first page is over the budget already.
	if p := other.submitForm("/console/signin", "/console/signin", url.Values{"key": {key}}); p.url != "/console/playground" || p.status != http.StatusTooManyRequests {
		t.Fatalf("a new session of the same user: %d at %s, want 429 at /console/playground (the budget is the user's)", p.status, p.url)
	}
	bob := f.browser(t)
	bob.signIn(f.user(t, "bob", 1))
	if p := bob.get("/console/credits"); p.status != http.StatusOK {
		t.Fatalf("another user: status %d, want 200", p.status)
	}
	// Forms are not reads: signing out still works.
	b.post("/console/signout", url.Values{"csrf": {csrf}})
	if p := b.get("/console/credits"); p.url != "/console/signin" {
		t.Fatalf("after signing out over budget: %s, want the sign-in page", p.url)
	}
}

// No directory listings, and the operator page does not exist for
// anybody who may not see it: anonymous, a user, the same 404 as a path
// that does not exist, for GET and POST alike.
func TestUnknownAndForbiddenPathsAreNotFound(t *testing.T) {
	f := newHoldingFixture(t)
	f.user(t, "alice", 1)
	id := f.submit(t, "alice", "a cat")
	anon, user := f.browser(t), f.browser(t)
	user.signIn(f.user(t, "bob", 1))
	unknown := anon.get("/console/no-such-page")
	if unknown.status != http.StatusNotFound {
		t.Fatalf("an unknown path: status %d, want 404", unknown.status)
	}
	for name, b := range map[string]*browser{"anonymous": anon, "a user": user} {
		for _, path := range []string{"/console/static/", "/console/static/nope.css", "/console/ops", "/console/ops?owner=alice", "/console/ops/", "/console/no-such-page"} {
			p := b.get(path)
			if p.status != http.StatusNotFound || p.url != strings.Split(path, "?")[0] || !strings.Contains(p.body, "There is no such page here.") {
				t.Errorf("%s GET %s: %d at %s, want the console's 404 there", name, path, p.status, p.url)
			}
			if strings.Contains(p.body, "console.css") && strings.Contains(p.body, "console.js") && strings.Contains(p.body, "<pre>") {
				t.Errorf("%s GET %s lists the static directory", name, path)
			}
		}
		for _, path := range []string{"/console/ops/tasks/" + id + "/cancel", "/console/ops/tasks/" + id + "/retry", "/console/no-such-form"} {
			if p := b.post(path, url.Values{"owner": {"alice"}, "reason": {"x"}}); p.status != http.StatusNotFound {
				t.Errorf("%s POST %s: status %d, want 404", name, path, p.status)
			}
		}
	}
	if p := anon.get("/console/static/console.css"); p.status != http.StatusOK || !strings.HasPrefix(p.header.Get("Content-Type"), "text/css") {
		t.Errorf("console.css: %d %s, want 200 text/css", p.status, p.header.Get("Content-Type"))
	}
	if task, _ := f.svc.Task(context.Background(), "alice", id); task.Status.Terminal() {
		t.Error("a refused operator form changed the task")
	}
}
