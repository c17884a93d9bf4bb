package console_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/server"
)

func TestSignInPageCarriesTheSecurityHeaders(t *testing.T) {
	f := newFixture(t, fixtureConfig{})
	p := f.browser(t).get("/console/")
	if p.status != http.StatusOK || !strings.HasPrefix(p.header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /console/: %d %s, want 200 HTML", p.status, p.header.Get("Content-Type"))
	}
	contains(t, p, `action="/console/signin"`, `name="key"`, `name="csrf"`)
	csp := p.header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'self'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'", "object-src 'none'", "form-action 'self'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") || strings.Contains(csp, "http") {
		t.Errorf("Content-Security-Policy %q allows more than the console's own origin", csp)
	}
	for h, want := range map[string]string{"X-Content-Type-Options": "nosniff", "Referrer-Policy": "same-origin", "Cache-Control": "no-store"} {
		if got := p.header.Get(h); got != want {
			t.Errorf("%s: got %q, want %q", h, got, want)
		}
	}
	for _, c := range p.header.Values("Set-Cookie") {
		if !strings.Contains(c, "HttpOnly") || !strings.Contains(c, "SameSite=Lax") || !strings.Contains(c, "Path=/console/") {
			t.Errorf("cookie %q: want HttpOnly, SameSite=Lax, Path=/console/", c)
		}
	}
	// No inline script or style: every <script> has a src, no style attributes.
	for _, tag := range regexp.MustCompile(`<script[^>]*>`).FindAllString(p.body, -1) {
		if !strings.Contains(tag, "src=") {
			t.Errorf("inline script %q", tag)
		}
	}
	if strings.Contains(p.body, "style=") || strings.Contains(p.body, "<style") || strings.Contains(p.body, " on") && regexp.MustCompile(` on[a-z]+=`).MatchString(p.body) {
		t.Error("the page has inline style or event handlers, which the policy would block")
	}
	// The assets are served from the embedded files, with the same headers.
	js := f.browser(t).get("/console/static/console.js")
	if js.status != http.StatusOK || !strings.Contains(js.body, "setUpTask") || js.header.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("console.js: %d, nosniff %q", js.status, js.header.Get("X-Content-Type-Options"))
	}
}

func TestSignInWithAKeyAndOut(t *testing.T) {
	f := newFixture(t, fixtureConfig{})
	key := f.user(t, "alice", 5)
	b := f.browser(t)
	if p := b.get("/console/keys"); p.url != "/console/signin" {
		t.Fatalf("signed out, /console/keys went to %s, want the sign-in page", p.url)
	}
	bad := b.submitForm("/console/signin", "/console/signin", url.Values{"key": {"igk_not-a-real-key-at-all-000000000000"}})
	if bad.status != http.StatusUnauthorized {
		t.Fatalf("a bad key: status %d, want 401", bad.status)
	}
	contains(t, bad, "not accepted")
	b.signIn(key)
	p := b.get("/console/credits")
	contains(t, p, `id="viewer">alice<`, `id="balance">5<`)
	b.submitForm("/console/credits", "/console/signout", nil)
	if p := b.get("/console/credits"); p.url != "/console/signin" {
		t.Fatalf("after signing out, /console/credits went to %s", p.url)
	}
}

func TestTamperedSessionIsRefused(t *testing.T) {
	f := newFixture(t, fixtureConfig{})
	b := f.browser(t)
	b.signIn(f.user(t, "bob", 1))
	session := b.sessionCookie()
	// Another token under bob's signature.
	token, sum, _ := strings.Cut(session.Value, ".")
	flipped := []byte(token)
	flipped[0] ^= 1
	b.setSessionCookie(string(flipped) + "." + sum)
	if p := b.get("/console/credits"); p.url != "/console/signin" {
		t.Fatalf("a tampered session reached %s, want the sign-in page", p.url)
	}
}

// A session cookie copied before sign-out opens nothing after it: not a
// page, not the JSON endpoint, not on another console process that
// shares the store.
func TestCopiedCookieIsRefusedAfterSignOut(t *testing.T) {
	f := newFixture(t, fixtureConfig{})
	b := f.browser(t)
	b.signIn(f.user(t, "alice", 1))
	id := f.submit(t, "alice", "a lighthouse")
	thief := f.browser(t)
	thief.setSessionCookie(b.sessionCookie().Value)
	other := f.otherProcess(t).browser(t)
	other.setSessionCookie(b.sessionCookie().Value)
	for _, c := range []*browser{thief, other} {
		if p := c.get("/console/credits"); p.status != http.StatusOK || p.url != "/console/credits" {
			t.Fatalf("the copied cookie before sign-out: %d at %s, want the credits page", p.status, p.url)
		}
	}

	b.submitForm("/console/credits", "/console/signout", nil)
	for name, c := range map[string]*browser{"this process": thief, "another process": other} {
		if p := c.get("/console/keys"); p.url != "/console/signin" {
			t.Errorf("%s: the copied cookie after sign-out reached %s, want the sign-in page", name, p.url)
		}
		if p := c.get("/console/api/tasks/" + id); p.status != http.StatusUnauthorized {
			t.Errorf("%s: the copied cookie after sign-out read the task: status %d, want 401", name, p.status)
		}
		if p := c.post("/console/signout/everywhere", url.Values{"csrf": {c.csrf("/console/signin")}}); p.status != http.StatusUnauthorized {
			t.Errorf("%s: sign out everywhere with the copied cookie after sign-out: status %d, want 401", name, p.status)
		}
	}
}

// Signing in again in a browser ends the session its cookie named, so
// that a copy of the old cookie (or one planted in the browser) opens
// nothing afterwards, whoever signs in.
func TestSignInAgainEndsTheBrowsersSession(t *testing.T) {
	f := newFixture(t, fixtureConfig{})
	alice := f.user(t, "alice", 1)
	b := f.browser(t)
	b.signIn(alice)
	for _, again := range []string{alice, f.user(t, "bob", 1)} {
		thief := f.browser(t)
		thief.setSessionCookie(b.sessionCookie().Value)
		if p := thief.get("/console/credits"); p.url != "/console/credits" {
			t.Fatalf("the copied cookie before signing in again: %d at %s, want the credits page", p.status, p.url)
		}
		b.signIn(again)
		if p := thief.get("/console/credits"); p.url != "/console/signin" {
			t.Errorf("the copied cookie after signing in again reached %s, want the sign-in page", p.url)
		}
		if p := b.get("/console/credits"); p.url != "/console/credits" {
			t.Errorf("the new session reached %s, want the credits page", p.url)
		}
	}
}

// Signing out ends the session in the store even when its key was
// revoked (the session opened nothing since, but its record stayed).
func TestSignOutEndsTheSessionOfARevokedKey(t *testing.T) {
	f := newFixture(t, fixtureConfig{})
	b := f.browser(t)
	b.signIn(f.user(t, "alice", 1))
	token, _, _ := strings.Cut(b.sessionCookie().Value, ".")
	sum := sha256.Sum256([]byte(token))
	id := hex.EncodeToString(sum[:])
	keys, err := f.svc.Keys(context.Background(), "alice")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.svc.RevokeKey(context.Background(), "alice", keys[0].ID); err != nil {
		t.Fatal(err)
	}
	b.post("/console/signout", url.Values{"csrf": {b.csrf("/console/signin")}})
	if _, err := f.store.Session(context.Background(), id); !errors.Is(err, imagegen.ErrSessionNotFound) {
		t.Errorf("the session after signing out: %v, want ErrSessionNotFound", err)
	}
}

// Sign out everywhere ends every session of the user, in every browser,
// and no one else's.
func TestSignOutEverywhere(t *testing.T) {
	f := newFixture(t, fixtureConfig{})
	key := f.user(t, "alice", 1)
	laptop, phone, bob := f.browser(t), f.browser(t), f.browser(t)
	laptop.signIn(key)
	phone.signIn(key)
	bob.signIn(f.user(t, "bob", 1))
	contains(t, phone.get("/console/keys"), `id="signout-everywhere"`)

	p := phone.submitForm("/console/keys", "/console/signout/everywhere", nil)
	if p.url != "/console/signin" {
		t.Fatalf("sign out everywhere: %d at %s, want the sign-in page", p.status, p.url)
	}
	for name, b := range map[string]*browser{"phone": phone, "laptop": laptop} {
		if p := b.get("/console/credits"); p.url != "/console/signin" {
			t.Errorf("%s: after sign-out everywhere, /console/credits went to %s", name, p.url)
		}
	}
	if p := bob.get("/console/credits"); p.url != "/console/credits" {
		t.Errorf("bob was signed out too (%s)", p.url)
	}
	// The key still works, for the API and a new sign-in.
	laptop.signIn(key)
}

func TestFormsWithoutAValidCSRFTokenAreRefused(t *testing.T) {
	f := newFixture(t, fixtureConfig{})
	alice := f.browser(t)
	alice.signIn(f.user(t, "alice", 1))
	bob := f.browser(t)
	bob.signIn(f.user(t, "bob", 1))
	bobToken := bob.csrf("/console/keys")

	cases := map[string]url.Values{
		"no token":        {"name": {"x"}},
		"a made-up token": {"name": {"x"}, "csrf": {"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}},
		"another's token": {"name": {"x"}, "csrf": {bobToken}},
		"an empty token":  {"name": {"x"}, "csrf": {""}},
	}
	for name, form := range cases {
		p := alice.post("/console/keys", form)
		if p.status != http.StatusForbidden {
			t.Errorf("%s: status %d, want 403", name, p.status)
		}
	}
	for _, path := range []string{"/console/playground", "/console/signout"} {
		if p := alice.post(path, url.Values{"prompt": {"a cat"}, "scene": {"text-to-image"}}); p.status != http.StatusForbidden {
			t.Errorf("POST %s without a token: status %d, want 403", path, p.status)
		}
	}
	keys, _ := f.svc.Keys(context.Background(), "alice")
	if len(keys) != 1 {
		t.Fatalf("refused forms created keys: alice has %d", len(keys))
	}
	tasks, _ := f.svc.ListTasks(context.Background(), "alice", "", 10, "")
	if len(tasks.Tasks) != 0 {
		t.Fatal("a refused playground form submitted a task")
	}
	// The real token works.
	if p := alice.submitForm("/console/keys", "/console/keys", url.Values{"name": {"ok"}}); p.status != http.StatusOK {
		t.Fatalf("with the page's token: status %d", p.status)
	}
	if keys, _ := f.svc.Keys(context.Background(), "alice"); len(keys) != 2 {
		t.Fatalf("alice has %d keys, want 2", len(keys))
	}
}

func TestAnotherUsersDataIsNotFound(t *testing.T) {
	f := newFixture(t, fixtureConfig{})
	aliceKey := f.user(t, "alice", 5)
	alice := f.browser(t)
	alice.signIn(aliceKey)
	taskID := f.submit(t, "alice", "alice's secret cat")
	aliceKeys, _ := f.svc.Keys(context.Background(), "alice")

	bob := f.browser(t)
	bob.signIn(f.user(t, "bob", 5))
	for _, path := range []string{"/console/tasks/" + taskID, "/console/api/tasks/" + taskID, "/console/tasks/no-such-task"} {
		p := bob.get(path)
		if p.status != http.StatusNotFound || strings.Contains(p.body, "secret cat") {
			t.Errorf("bob GET %s: status %d, want 404 without alice's data", path, p.status)
		}
	}
	if p := bob.submitForm("/console/tasks", "/console/tasks/"+taskID+"/cancel", nil); p.status != http.StatusNotFound {
		t.Errorf("bob cancelling alice's task: status %d, want 404", p.status)
	}
	if p := bob.submitForm("/console/keys", "/console/keys/"+aliceKeys[0].ID+"/revoke", nil); p.status != http.StatusNotFound {
		t.Errorf("bob revoking alice's key: status %d, want 404", p.status)
	}
	if _, err := f.svc.Authenticate(context.Background(), aliceKey); err != nil {
		t.Fatalf("alice's key stopped working: %v", err)
	}
	for _, path := range []string{"/console/tasks", "/console/credits", "/console/keys"} {
		if p := bob.get(path); strings.Contains(p.body, "secret cat") || strings.Contains(p.body, aliceKeys[0].ID) || strings.Contains(p.body, taskID) {
			t.Errorf("bob's %s shows alice's data", path)
		}
	}
	// Alice sees her own task.
	contains(t, alice.get("/console/tasks/"+taskID), "alice&#39;s secret cat")
}

func TestUserStringsAreEscaped(t *testing.T) {
	f := newFixture(t, fixtureConfig{})
	b := f.browser(t)
	b.signIn(f.user(t, "alice", 5))
	const prompt = `<img src=x onerror=alert(1)> "quoted" & more`
	id := b.play(prompt)
	task := b.get("/console/tasks/" + id)
	contains(t, task, `&lt;img src=x onerror=alert(1)&gt; &#34;quoted&#34; &amp; more`)
	if strings.Contains(task.body, "<img src=x") {
		t.Fatal("the prompt was written into the page as markup")
	}
	if list := b.get("/console/tasks"); strings.Contains(list.body, "<img src=x") || !strings.Contains(list.body, "&lt;img src=x") {
		t.Fatal("the task list does not escape the prompt")
	}
	keys := b.submitForm("/console/keys", "/console/keys", url.Values{"name": {`<script>alert("k")</script>`}})
	contains(t, keys, `&lt;script&gt;alert(&#34;k&#34;)&lt;/script&gt;`)
	if strings.Contains(keys.body, `<script>alert`) {
		t.Fatal("the key name was written into the page as markup")
	}
}

func TestKeysCreateShowOnceRevoke(t *testing.T) {
	f := newFixture(t, fixtureConfig{})
	b := f.browser(t)
	b.signIn(f.user(t, "alice", 1))
	p := b.submitForm("/console/keys", "/console/keys", url.Values{"name": {"CI"}})
	m := regexp.MustCompile(`id="new-key-value">(igk_[0-9A-Za-z]+)<`).FindStringSubmatch(p.body)
	if m == nil {
		t.Fatal("the new key is not shown")
	}
	newKey := m[1]
	rec, err := f.svc.Authenticate(context.Background(), newKey)
	if err != nil || rec.Owner != "alice" || rec.Name != "CI" {
		t.Fatalf("the shown key: %+v, %v; want a live key of alice named CI", rec, err)
	}
	if again := b.get("/console/keys"); strings.Contains(again.body, newKey) {
		t.Fatal("the key is shown a second time")
	}
	revoked := b.submitForm("/console/keys", "/console/keys/"+rec.ID+"/revoke", nil)
	if revoked.status != http.StatusOK || !strings.Contains(revoked.body, "revoked") {
		t.Fatalf("revoke: status %d", revoked.status)
	}
	if _, err := f.svc.Authenticate(context.Background(), newKey); err == nil {
		t.Fatal("the revoked key still works")
	}
}

// Creating a key counts against the user's rate limit, shared with their
// API use, so that a create-and-revoke loop cannot pile up keys in the
// store at page speed; revoking does not count, so that a user who has
// spent the budget can still revoke a leaked key.
func TestKeyCreationSharesTheAPIRateLimit(t *testing.T) {
	f := newFixture(t, fixtureConfig{rateLimit: 3})
	b := f.browser(t)
	b.signIn(f.user(t, "alice", 1)) // one of the 3
	var ids []string
	for i := range 2 {
		p := b.submitForm("/console/keys", "/console/keys", url.Values{"name": {fmt.Sprint("k", i)}})
		if p.status != http.StatusOK || !strings.Contains(p.body, `id="new-key-value"`) {
			t.Fatalf("key %d within the limit: status %d, want 200 with the new key", i, p.status)
		}
	}
	refused := b.submitForm("/console/keys", "/console/keys", url.Values{"name": {"one more"}})
	if refused.status != http.StatusTooManyRequests || refused.header.Get("Retry-After") == "" ||
		strings.Contains(refused.body, `id="new-key-value"`) {
		t.Fatalf("third create in the window: status %d, Retry-After %q; want 429 and no key", refused.status, refused.header.Get("Retry-After"))
	}
	contains(t, refused, "Too many requests")
	keys, err := f.svc.Keys(context.Background(), "alice")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if strings.HasPrefix(k.Name, "k") || k.Name == "one more" {
			ids = append(ids, k.ID)
		}
	}
	if len(ids) != 2 {
		t.Fatalf("alice holds %d keys made on the page, want the 2 made within the limit", len(ids))
	}
	for _, id := range ids {
		if p := b.submitForm("/console/keys", "/console/keys/"+id+"/revoke", nil); p.status != http.StatusOK {
			t.Fatalf("revoke with the budget spent: status %d, want 200", p.status)
		}
	}
}

// A sign-in opens a session in the store that lasts for hours, so it
// counts against the key's rate limit, shared with its API use: a
// sign-in loop with a good key cannot pile up sessions at page speed.
// The refusal opens no session and says when to come back.
func TestSignInSharesTheAPIRateLimit(t *testing.T) {
	f := newFixture(t, fixtureConfig{rateLimit: 2})
	key := f.user(t, "alice", 1)
	for range 2 {
		f.browser(t).signIn(key)
	}
	b := f.browser(t)
	refused := b.submitForm("/console/signin", "/console/signin", url.Values{"key": {key}})
	if refused.status != http.StatusTooManyRequests || refused.header.Get("Retry-After") == "" {
		t.Fatalf("third sign-in in the window: status %d, Retry-After %q; want 429 with Retry-After", refused.status, refused.header.Get("Retry-After"))
	}
	contains(t, refused, "Too many requests")
	if p := b.get("/console/credits"); p.url != "/console/signin" {
		t.Fatalf("after the refused sign-in, /console/credits went to %s, want the sign-in page", p.url)
	}
	n, err := f.store.EndSessions(context.Background(), "alice")
	if err != nil || n != 2 {
		t.Fatalf("alice's sessions: %d (%v), want the 2 opened within the limit", n, err)
	}
}

// The keys page shows when each key last authenticated a request:
// signing in used the session's key; a key made on the page is unused.
func TestKeysPageShowsLastUse(t *testing.T) {
	f := newFixture(t, fixtureConfig{})
	b := f.browser(t)
	b.signIn(f.user(t, "alice", 1))
	b.submitForm("/console/keys", "/console/keys", url.Values{"name": {"CI"}})
	keys, err := f.svc.Keys(context.Background(), "alice")
	if err != nil || len(keys) != 2 {
		t.Fatalf("alice's keys: %v %v", keys, err)
	}
	session, unused := keys[0], keys[1]
	if session.LastUsedAt.IsZero() || !unused.LastUsedAt.IsZero() {
		t.Fatalf("last use: session key %v, new key %v; want a time and never", session.LastUsedAt, unused.LastUsedAt)
	}
	lastUsed := regexp.MustCompile(`(?s)<tr data-key-id="([^"]+)">.*?<td class="last-used"[^>]*>(.*?)</td>`)
	got := map[string]string{}
	for _, m := range lastUsed.FindAllStringSubmatch(b.get("/console/keys").body, -1) {
		got[m[1]] = m[2]
	}
	if want := session.LastUsedAt.UTC().Format("2006-01-02 15:04:05 UTC"); got[session.ID] != want {
		t.Errorf("the session key's last use shows %q, want %q", got[session.ID], want)
	}
	if !strings.Contains(got[unused.ID], "never") {
		t.Errorf("the unused key's last use shows %q, want never", got[unused.ID])
	}
}

func TestRevokingTheSessionsKeyEndsTheSession(t *testing.T) {
	f := newFixture(t, fixtureConfig{})
	b := f.browser(t)
	b.signIn(f.user(t, "alice", 1))
	keys, _ := f.svc.Keys(context.Background(), "alice")
	p := b.submitForm("/console/keys", "/console/keys/"+keys[0].ID+"/revoke", nil)
	if p.url != "/console/signin" {
		t.Fatalf("after revoking its own key the session went on to %s", p.url)
	}
}

func TestPlaygroundChargesAndSharesTheAPIRateLimit(t *testing.T) {
	f := newFixture(t, fixtureConfig{rateLimit: 3})
	key := f.user(t, "alice", 10)
	b := f.browser(t)
	b.signIn(key)

	// The sign-in, one API request with the key, then one playground submission: the limit of 3 is used up.
	req, _ := http.NewRequest(http.MethodGet, f.ts.URL+"/api/v1/credits", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("API request: %v %v", res, err)
	}
	res.Body.Close()
	id := b.play("a lighthouse at dusk")

	// The page follows the task; the JSON endpoint waits for it.
	var got struct {
		Status  string   `json:"status"`
		Images  []string `json:"images"`
		Balance int64    `json:"credits_remaining"`
	}
	testenv.EventuallyNoError(t, 20*time.Second, "the task to succeed", func() error {
		res, err := b.client.Get(f.ts.URL + "/console/api/tasks/" + id + "?wait=5") // a long poll
		if err != nil {
			t.Fatal(err)
		}
		if err := decodeJSON(res, &got); err != nil {
			t.Fatal(err)
		}
		if got.Status != "success" {
			return fmt.Errorf("status %q", got.Status)
		}
		return nil
	})
	if got.Status != "success" || len(got.Images) != 1 || got.Balance != 9 {
		t.Fatalf("task: %+v, want success with 1 image and 9 credits left", got)
	}
	img, err := http.Get(got.Images[0])
	if err != nil || img.StatusCode != http.StatusOK || img.Header.Get("Content-Type") != "image/png" {
		t.Fatalf("the signed image URL: %v %v", img, err)
	}
	img.Body.Close()
	ledger := b.get("/console/credits")
	contains(t, ledger, `id="balance">9<`, "<code>"+id+"</code>", ">-1<") // the reference as the API shows it

	refused := b.submitForm("/console/playground", "/console/playground", url.Values{"scene": {"text-to-image"}, "prompt": {"one more"}})
	if refused.status != http.StatusTooManyRequests {
		t.Fatalf("fourth request in the window: status %d, want 429", refused.status)
	}
	contains(t, refused, "Too many requests", "one more") // the form is kept
	if bal, _ := f.svc.Balance(context.Background(), "alice"); bal != 9 {
		t.Fatalf("balance %d after a refused submission, want 9", bal)
	}
}

func TestPlaygroundShowsValidationErrors(t *testing.T) {
	f := newFixture(t, fixtureConfig{})
	b := f.browser(t)
	b.signIn(f.user(t, "alice", 1))
	p := b.submitForm("/console/playground", "/console/playground", url.Values{"scene": {"image-to-image"}, "prompt": {"a cat"}})
	if p.status != http.StatusUnprocessableEntity {
		t.Fatalf("image-to-image without references: status %d, want 422", p.status)
	}
	contains(t, p, "image_input")
	poor := f.browser(t)
	poor.signIn(f.user(t, "poor", 0))
	if p := poor.submitForm("/console/playground", "/console/playground", url.Values{"scene": {"text-to-image"}, "prompt": {"a cat"}}); p.status != http.StatusPaymentRequired {
		t.Fatalf("no credits: status %d, want 402", p.status)
	}
}

func TestCreditsArePagedNewestFirst(t *testing.T) {
	f := newFixture(t, fixtureConfig{})
	b := f.browser(t)
	b.signIn(f.user(t, "alice", 0))
	for i := range 30 {
		if _, err := f.svc.Grant(context.Background(), "alice", int64(i+1), fmt.Sprintf("grant-%d", i+1)); err != nil {
			t.Fatal(err)
		}
	}
	rows := func(p page) int { return strings.Count(p.body, `<tr class="kind-`) }
	first := b.get("/console/credits")
	contains(t, first, `id="balance">465<`, "&#43;30<", ">465<", "<code>grant-30</code>", `id="older"`)
	if strings.Contains(first.body, ">grant-5<") || rows(first) != 25 {
		t.Fatalf("page 1 holds %d rows; want the 25 newest entries (30 down to 6)", rows(first))
	}
	older := regexp.MustCompile(`href="(/console/credits\?cursor=[^"]+)" id="older"`).FindStringSubmatch(first.body)
	if older == nil {
		t.Fatal("no link to the older page")
	}
	second := b.get(strings.ReplaceAll(older[1], "&amp;", "&"))
	contains(t, second, "&#43;5<", "&#43;1<", "<code>grant-1</code>", `id="newest"`)
	if rows(second) != 5 || strings.Contains(second.body, `id="older"`) {
		t.Fatalf("page 2 holds %d rows; want the 5 oldest entries, and no older page", rows(second))
	}
	for _, path := range []string{"/console/credits?cursor=not-a-cursor", "/console/tasks?cursor=not-a-cursor", "/console/tasks?status=done"} {
		if p := b.get(path); p.status != http.StatusBadRequest || !strings.Contains(p.body, "Bad request") {
			t.Fatalf("GET %s: status %d, want 400 with a message", path, p.status)
		}
	}
}

func TestFailedSignInsAreLimitedPerAddress(t *testing.T) {
	f := newFixture(t, fixtureConfig{})
	key := f.user(t, "alice", 1)
	b := f.browser(t)
	for i := range server.DefaultAuthFailures {
		if p := b.submitForm("/console/signin", "/console/signin", url.Values{"key": {"wrong-key-0123456789"}}); p.status != http.StatusUnauthorized {
			t.Fatalf("failure %d: status %d, want 401", i+1, p.status)
		}
	}
	p := b.submitForm("/console/signin", "/console/signin", url.Values{"key": {"wrong-key-0123456789"}})
	if p.status != http.StatusTooManyRequests || p.header.Get("Retry-After") == "" {
		t.Fatalf("beyond the budget: status %d, Retry-After %q; want 429 with Retry-After", p.status, p.header.Get("Retry-After"))
	}
	b.signIn(key) // a good key still gets in: only failures are counted
}

// The console's sign-in and the API share one budget of failures per
// address: failures spent on the API leave none for guessing keys here.
func TestSignInSharesTheAPIFailureBudget(t *testing.T) {
	f := newFixture(t, fixtureConfig{})
	for i := range server.DefaultAuthFailures {
		r, err := http.NewRequest("GET", f.ts.URL+"/api/v1/credits", nil)
		if err != nil {
			t.Fatal(err)
		}
		r.Header.Set("Authorization", "Bearer wrong-key-0123456789")
		res, err := f.ts.Client().Do(r)
		if err != nil {
			t.Fatal(err)
		}
		_ = res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("API failure %d: status %d, want 401", i+1, res.StatusCode)
		}
	}
	p := f.browser(t).submitForm("/console/signin", "/console/signin", url.Values{"key": {"wrong-key-0123456789"}})
	if p.status != http.StatusTooManyRequests {
		t.Fatalf("a console sign-in after the API's failures: status %d, want 429", p.status)
	}
}

func TestOperatorPagesAreForOperatorsOnly(t *testing.T) {
	f := newFixture(t, fixtureConfig{})
	f.user(t, "alice", 3)
	taskID := f.submit(t, "alice", "queued <b>cat</b>")

	user := f.browser(t)
	user.signIn(f.user(t, "bob", 1))
	for _, path := range []string{"/console/ops", "/console/ops?owner=alice"} {
		if p := user.get(path); p.status != http.StatusNotFound || strings.Contains(p.body, "queued") {
			t.Errorf("a user GET %s: status %d, want 404", path, p.status)
		}
	}
	if p := user.submitForm("/console/keys", "/console/ops/tasks/"+taskID+"/cancel", url.Values{"owner": {"alice"}, "reason": {"x"}}); p.status != http.StatusNotFound {
		t.Errorf("a user's operator cancel: status %d, want 404", p.status)
	}
	if strings.Contains(user.get("/console/keys").body, "/console/ops") {
		t.Error("a user sees the operator link")
	}

	ops := f.browser(t)
	ops.signIn(f.user(t, "ops", 0))
	p := ops.get("/console/ops?owner=alice")
	if p.status != http.StatusOK {
		t.Fatalf("operator: status %d", p.status)
	}
	contains(t, p, `id="balance">2<`, taskID, "queued &lt;b&gt;cat&lt;/b&gt;")
	if nobody := ops.get("/console/ops?owner=nobody"); !strings.Contains(nobody.body, `id="not-found"`) {
		t.Error("an unknown owner is not reported as such")
	}
}

func TestOperatorCancelNeedsAReasonAndRefunds(t *testing.T) {
	hold := make(chan struct{})
	model := imagegentest.NewModel(1, func(ctx context.Context, _ imagegen.Generation) ([]imagegen.GeneratedImage, error) {
		select { // runs until cancelled (or the test ends)
		case <-ctx.Done():
		case <-hold:
		}
		return nil, ctx.Err()
	})
	f := newFixture(t, fixtureConfig{model: model})
	t.Cleanup(func() { close(hold) })
	f.user(t, "alice", 3)
	taskID := f.submit(t, "alice", "a long one")
	ops := f.browser(t)
	ops.signIn(f.user(t, "ops", 0))
	path := "/console/ops/tasks/" + taskID + "/cancel"
	if p := ops.submitForm("/console/ops?owner=alice", path, url.Values{"owner": {"alice"}, "reason": {"  "}}); p.status != http.StatusUnprocessableEntity {
		t.Fatalf("cancel without a reason: status %d, want 422", p.status)
	}
	if task, _ := f.svc.Task(context.Background(), "alice", taskID); task.Status.Terminal() {
		t.Fatal("a cancel without a reason changed the task")
	}
	p := ops.submitForm("/console/ops?owner=alice", path, url.Values{"owner": {"alice"}, "reason": {"user asked by mail"}})
	if p.status != http.StatusOK || !strings.Contains(p.body, "cancelled") {
		t.Fatalf("cancel: status %d", p.status)
	}
	task, err := f.svc.Task(context.Background(), "alice", taskID)
	if err != nil || task.Status != imagegen.StatusFailed || task.ErrorCode != imagegen.CodeCancelled || !task.Refunded {
		t.Fatalf("task after an operator's cancel: %+v %v; want failed, cancelled, refunded", task, err)
	}
	if bal, _ := f.svc.Balance(context.Background(), "alice"); bal != 3 {
		t.Fatalf("alice's balance %d, want 3 (refunded)", bal)
	}
	if p := ops.submitForm("/console/ops?owner=alice", "/console/ops/tasks/no-such/cancel", url.Values{"owner": {"alice"}, "reason": {"x"}}); p.status != http.StatusNotFound {
		t.Fatalf("cancel of no task: status %d, want 404", p.status)
	}
}

func TestOperatorDashboardCountsAndRetries(t *testing.T) {
	model := imagegentest.NewModel(1,
		imagegentest.Fail(&imagegen.ModelError{Provider: "scripted", Refused: true, Message: "refused"}),
		imagegentest.Fail(&imagegen.ModelError{Provider: "scripted", Refused: true, Message: "refused"}),
	) // then it succeeds
	f := newFixture(t, fixtureConfig{model: model})
	f.user(t, "alice", 5)
	first, second := f.submit(t, "alice", "one"), f.submit(t, "alice", "two")
	for _, id := range []string{first, second} {
		if task, err := f.svc.WaitTask(context.Background(), "alice", id, 10*time.Second); err != nil || task.Status != imagegen.StatusFailed {
			t.Fatalf("task %s: %+v %v; want failed", id, task, err)
		}
	}
	ops := f.browser(t)
	ops.signIn(f.user(t, "ops", 0))
	p := ops.get("/console/ops")
	contains(t, p, `id="pending">0<`, `data-status="failed">2<`, `data-status="success">0<`, `data-code="content_policy">2<`)

	path := "/console/ops/tasks/" + first + "/retry"
	if p := ops.submitForm("/console/ops?owner=alice", path, url.Values{"owner": {"alice"}}); p.status != http.StatusUnprocessableEntity {
		t.Fatalf("retry without a reason: status %d, want 422", p.status)
	}
	p = ops.submitForm("/console/ops?owner=alice", path, url.Values{"owner": {"alice"}, "reason": {"provider fixed"}, "recharge": {"1"}})
	if p.status != http.StatusOK || !strings.Contains(p.body, "back in the queue") {
		t.Fatalf("retry: status %d", p.status)
	}
	task, err := f.svc.WaitTask(context.Background(), "alice", first, 10*time.Second)
	if err != nil || task.Status != imagegen.StatusSuccess {
		t.Fatalf("the retried task: %+v %v; want success", task, err)
	}
	if bal, _ := f.svc.Balance(context.Background(), "alice"); bal != 4 {
		t.Fatalf("balance %d after a recharged retry, want 4", bal)
	}
	if p := ops.submitForm("/console/ops?owner=alice", path, url.Values{"owner": {"alice"}, "reason": {"again"}}); p.status != http.StatusConflict {
		t.Fatalf("retry of a task that succeeded: status %d, want 409", p.status)
	}
}

// An operator signs a user out everywhere, with a reason; the user's
// other sessions go on being refused, their key still works, and a user
// who is not an operator cannot do it.
func TestOperatorSignsAUserOutEverywhere(t *testing.T) {
	f := newFixture(t, fixtureConfig{})
	key := f.user(t, "alice", 1)
	laptop, phone := f.browser(t), f.browser(t)
	laptop.signIn(key)
	phone.signIn(key)
	bob := f.browser(t)
	bob.signIn(f.user(t, "bob", 1))
	if p := bob.submitForm("/console/keys", "/console/ops/sessions/end", url.Values{"owner": {"alice"}, "reason": {"x"}}); p.status != http.StatusNotFound {
		t.Fatalf("a user ending another's sessions: status %d, want 404", p.status)
	}
	if p := laptop.get("/console/credits"); p.url != "/console/credits" {
		t.Fatal("a user's refused request ended alice's session")
	}

	ops := f.browser(t)
	ops.signIn(f.user(t, "ops", 0))
	if p := ops.submitForm("/console/ops?owner=alice", "/console/ops/sessions/end", url.Values{"owner": {"alice"}, "reason": {" "}}); p.status != http.StatusUnprocessableEntity {
		t.Fatalf("without a reason: status %d, want 422", p.status)
	}
	p := ops.submitForm("/console/ops?owner=alice", "/console/ops/sessions/end", url.Values{"owner": {"alice"}, "reason": {"laptop stolen"}})
	contains(t, p, `id="notice">Every console session of the user has ended.`)
	for name, b := range map[string]*browser{"laptop": laptop, "phone": phone} {
		if p := b.get("/console/credits"); p.url != "/console/signin" {
			t.Errorf("%s: after the operator ended alice's sessions, /console/credits went to %s", name, p.url)
		}
	}
	if p := ops.get("/console/credits"); p.url != "/console/credits" {
		t.Error("the operator's own session ended too")
	}
	if _, err := f.svc.Authenticate(context.Background(), key); err != nil {
		t.Errorf("alice's key after her sessions ended: %v", err)
	}
}
