package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/placeholder"
)

// alertText returns the text of the page's error box, "" when it has none.
func alertText(p page) string {
	m := regexp.MustCompile(`<p class="alert" role="alert" id="error">([^<]*)</p>`).FindStringSubmatch(p.body)
	if m == nil {
		return ""
	}
	return m[1]
}

// Errors are shown as errors (the alert box), successes as notices, and
// "nothing changed" as neutral information.
func TestErrorsLookLikeErrors(t *testing.T) {
	f := newHoldingFixture(t)
	key := f.user(t, "alice", 2)
	b := f.browser(t)
	b.signIn(key)

	for name, p := range map[string]page{
		"an unknown page":  b.get("/console/no-such-page"),
		"a missing task":   b.get("/console/tasks/00000000-0000-0000-0000-000000000000"),
		"a bad list query": b.get("/console/tasks?status=sideways"),
		"a stale form":     b.post("/console/keys", url.Values{"csrf": {"stale"}}),
	} {
		if alertText(p) == "" || strings.Contains(p.body, `class="notice"`) {
			t.Errorf("%s (status %d): want its message in the alert box and no success notice", name, p.status)
		}
	}
	if got := alertText(b.get("/console/no-such-page")); got != "There is no such page here." {
		t.Errorf("the 404's alert reads %q", got)
	}

	id := f.submit(t, "alice", "a cat")
	p := b.submitForm("/console/tasks/"+id, "/console/tasks/"+id+"/cancel", nil)
	contains(t, p, `<p class="notice" role="status" id="notice">The task was cancelled.`)
	p = b.submitForm("/console/tasks/"+id, "/console/tasks/"+id+"/cancel", nil)
	contains(t, p, `<p class="info" role="status" id="info">The task had already finished; nothing was changed.</p>`)
	if strings.Contains(p.body, `class="notice"`) || alertText(p) != "" {
		t.Error("nothing changed, yet the page shows a success or an error")
	}
}

// The task page shows the task's id, model, seed, timings and progress;
// its cancel button says what it does.
func TestTaskPageShowsIDModelSeedTimingsAndProgress(t *testing.T) {
	f := newFixture(t, fixtureConfig{})
	b := f.browser(t)
	b.signIn(f.user(t, "alice", 3))
	seed := int64(42)
	sub, err := f.svc.Submit(context.Background(), "alice", imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "a cat", Seed: &seed})
	if err != nil {
		t.Fatal(err)
	}
	task, err := f.svc.WaitTask(context.Background(), "alice", sub.TaskID, 10*time.Second)
	if err != nil || task.Status != imagegen.StatusSuccess {
		t.Fatalf("task: %+v %v", task, err)
	}
	p := b.get("/console/tasks/" + sub.TaskID)
	contains(t, p,
		`<code id="task-id">`+sub.TaskID+`</code>`,
		`<dd id="model">`+placeholder.Name+`</dd>`,
		`<dd id="seed">42</dd>`,
		`<dd id="shown-started">`+task.StartedAt.UTC().Format("2006-01-02 15:04:05 UTC")+`</dd>`,
		`<dd id="shown-finished">`+task.FinishedAt.UTC().Format("2006-01-02 15:04:05 UTC")+`</dd>`,
		`id="shown-progress">Done: 1 image.</p>`,
	)
	for _, id := range []string{"shown-waited", "shown-generation"} {
		if !regexp.MustCompile(`<dd id="` + id + `">[0-9.]+ m?s</dd>`).MatchString(p.body) {
			t.Errorf("the page's %s is not a duration", id)
		}
	}

	// A waiting task says where it is, and its cancel button what it does.
	h := newHoldingFixture(t)
	hb := h.browser(t)
	hb.signIn(h.user(t, "bob", 3))
	running := h.submit(t, "bob", "a long one")
	queued := h.submit(t, "bob", "behind it")
	h.awaitProcessing(t, "bob", running) // the worker takes the first one up
	contains(t, hb.get("/console/tasks/"+running), `id="shown-progress">Generating (attempt 1), for `, `<dd id="shown-finished">not yet</dd>`,
		`Cancel this task</button>`, `While it waits in the queue, its 1 credit goes back to your balance; once its generation has begun, it stays spent.`)
	p = hb.get("/console/tasks/" + queued)
	if !strings.Contains(p.body, `id="shown-progress">Next in the queue`) && !strings.Contains(p.body, `id="shown-progress">Generating`) {
		t.Errorf("the queued task's progress: %s", regexp.MustCompile(`id="shown-progress">[^<]*`).FindString(p.body))
	}
	if strings.Contains(p.body, "Cancel (refunded)") {
		t.Error("the old, ambiguous cancel wording is back")
	}
	var js struct {
		Model string `json:"model"`
		Shown struct {
			Progress string `json:"progress"`
		} `json:"shown"`
	}
	jp := hb.get("/console/api/tasks/" + running)
	if err := json.Unmarshal([]byte(jp.body), &js); err != nil {
		t.Fatalf("the JSON endpoint: %d %v", jp.status, err)
	}
	if js.Model == "" || !strings.HasPrefix(js.Shown.Progress, "Generating") {
		t.Errorf("the JSON endpoint: model %q, progress %q", js.Model, js.Shown.Progress)
	}
}

// Signing out says so, on the sign-in page.
func TestSignOutIsConfirmed(t *testing.T) {
	f := newFixture(t, fixtureConfig{})
	key := f.user(t, "alice", 1)
	b := f.browser(t)
	b.signIn(key)
	p := b.submitForm("/console/credits", "/console/signout", nil)
	if p.url != "/console/signin" || p.status != http.StatusOK {
		t.Fatalf("sign out: %d at %s", p.status, p.url)
	}
	contains(t, p, `id="notice">You are signed out.`, `id="signin"`)
	b.signIn(key)
	p = b.submitForm("/console/keys", "/console/signout/everywhere", nil)
	contains(t, p, `id="notice">You are signed out everywhere`)
}

// The page of a running task whose model reported progress shows a
// progress bar at it, and the JSON the page polls carries it.
func TestTaskPageProgressBar(t *testing.T) {
	h := newHoldingFixture(t)
	b := h.browser(t)
	b.signIn(h.user(t, "bob", 3))
	id := h.submit(t, "bob", "a long one")
	task := h.awaitProcessing(t, "bob", id) // the worker takes it up
	contains(t, b.get("/console/tasks/"+id), `<progress id="progress-bar" max="1" value="0" hidden>`)
	if err := h.store.SetProgress(context.Background(), id, task.Attempt, 0.625); err != nil {
		t.Fatal(err)
	}
	contains(t, b.get("/console/tasks/"+id), `<progress id="progress-bar" max="1" value="0.625">`, `62% done`)
	var js struct {
		Progress float64 `json:"progress"`
	}
	jp := b.get("/console/api/tasks/" + id)
	if err := json.Unmarshal([]byte(jp.body), &js); err != nil || js.Progress != 0.625 {
		t.Errorf("the JSON endpoint: %d %v, progress %v", jp.status, err, js.Progress)
	}
}
