package console_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"testing"
)

var onceField = regexp.MustCompile(`name="once" value="([^"]+)"`)

// A playground form sent twice (a double click, a reload that posts
// again) makes one task and one charge: the second answer shows the
// first one's task. Sent again with other values, it makes nothing and
// offers a fresh form.
func TestPlaygroundFormIsSubmittedOnce(t *testing.T) {
	f := newFixture(t, fixtureConfig{})
	b := f.browser(t)
	b.signIn(f.user(t, "alice", 5))
	form := b.get("/console/playground")
	m := onceField.FindStringSubmatch(form.body)
	if m == nil {
		t.Fatal("the playground form carries no once token")
	}
	values := func(prompt string) url.Values {
		return url.Values{"scene": {"text-to-image"}, "prompt": {prompt}, "aspect_ratio": {"1:1"}, "once": {m[1]}}
	}
	first := b.submitForm("/console/playground", "/console/playground", values("a lighthouse"))
	second := b.submitForm("/console/playground", "/console/playground", values("a lighthouse"))
	if taskURL.FindStringSubmatch(first.url) == nil || second.url != first.url {
		t.Fatalf("the same form twice: at %s then %s, want the same task page", first.url, second.url)
	}
	if bal, _ := f.svc.Balance(context.Background(), "alice"); bal != 4 {
		t.Fatalf("balance %d after one form sent twice, want 4 (one charge)", bal)
	}

	changed := b.submitForm("/console/playground", "/console/playground", values("a castle"))
	if changed.status != http.StatusConflict {
		t.Fatalf("the same form with another prompt: status %d, want 409", changed.status)
	}
	contains(t, changed, "already sent with other values", "a castle")
	if fresh := onceField.FindStringSubmatch(changed.body); fresh == nil || fresh[1] == m[1] {
		t.Fatalf("the form shown again must carry a fresh once token, got %v", fresh)
	}
	if bal, _ := f.svc.Balance(context.Background(), "alice"); bal != 4 {
		t.Fatalf("balance %d after a refused resend, want 4", bal)
	}

	// A refused form is shown again with a fresh token: sent again as it
	// is, it is validated and refused again (a refusal keeps no record of
	// its key) and charges nothing; corrected, it makes a task.
	refusedOnce := onceField.FindStringSubmatch(b.get("/console/playground").body)[1]
	bad := url.Values{"scene": {"image-to-image"}, "prompt": {"a cat"}, "once": {refusedOnce}}
	refused := b.submitForm("/console/playground", "/console/playground", bad)
	if refused.status != http.StatusUnprocessableEntity {
		t.Fatalf("invalid form: status %d, want 422", refused.status)
	}
	if again := b.submitForm("/console/playground", "/console/playground", bad); again.status != http.StatusUnprocessableEntity {
		t.Fatalf("the invalid form resent: status %d, want 422", again.status)
	}
	fresh := onceField.FindStringSubmatch(refused.body)
	if fresh == nil || fresh[1] == refusedOnce {
		t.Fatalf("the refused form must be shown with a fresh once token, got %v", fresh)
	}
	bad.Set("scene", "text-to-image")
	bad.Set("once", fresh[1])
	if p := b.submitForm("/console/playground", "/console/playground", bad); taskURL.FindStringSubmatch(p.url) == nil {
		t.Fatalf("the corrected form: at %s (status %d), want a task page", p.url, p.status)
	}
	if bal, _ := f.svc.Balance(context.Background(), "alice"); bal != 3 {
		t.Fatalf("balance %d after two refusals and one task, want 3", bal)
	}
}
