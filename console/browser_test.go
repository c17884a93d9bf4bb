package console_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/placeholder"
)

// chromiumPath returns the Chromium to drive: IMAGEGEN_TEST_CHROMIUM, or
// /usr/bin/chromium. The browser tests skip, naming the variable, when
// there is neither.
func chromiumPath(t *testing.T) string {
	if p := os.Getenv("IMAGEGEN_TEST_CHROMIUM"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("IMAGEGEN_TEST_CHROMIUM=%s: %v", p, err)
		}
		return p
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	t.Skip("no Chromium found: set IMAGEGEN_TEST_CHROMIUM to a chromium binary (Debian: apt-get install chromium chromium-driver)")
	return ""
}

// artifactDir is where screenshots go: $IMAGEGEN_TEST_ARTIFACTS/console
// (kept), else a temporary directory (removed after the test).
func artifactDir(t *testing.T) string {
	dir := t.TempDir()
	if base := os.Getenv("IMAGEGEN_TEST_ARTIFACTS"); base != "" {
		dir = filepath.Join(base, "console")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("screenshots in %s", dir)
	return dir
}

// newBrowser starts headless Chromium with a fresh profile; it is killed
// when the test ends.
func newBrowser(t *testing.T) context.Context {
	path := chromiumPath(t)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1100, 800),
	)
	browser, cancelBrowser := chromedp.NewContext(alloc)
	if err := chromedp.Do(browser); err != nil { // starts the browser, for as long as browser lives
		cancelBrowser()
		cancelAlloc()
		t.Fatalf("starting %s: %v", path, err)
	}
	ctx, cancelTimeout := context.WithTimeout(browser, 90*time.Second) // bounds the test's steps
	t.Cleanup(func() { cancelTimeout(); cancelBrowser(); cancelAlloc() })
	return ctx
}

// shoot saves a full-page PNG screenshot as dir/name.
func shoot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

func run(t *testing.T, ctx context.Context, step string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", step, err)
	}
}

// value runs one action that answers a value.
func value[T any](t *testing.T, ctx context.Context, step string, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", step, err)
	}
	return v
}

func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	return value(t, ctx, "read "+sel, chromedp.TextContent(chromedp.CSS(sel)))
}

func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	return value(t, ctx, expr, chromedp.Evaluate[T](expr))
}

func TestConsoleInABrowser(t *testing.T) {
	ctx := newBrowser(t)
	dir := artifactDir(t)
	model, err := placeholder.New(placeholder.Config{LongSide: 256, Delay: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, fixtureConfig{model: model})
	key := f.user(t, "alice", 10)
	base := f.ts.URL + "/console"

	// Sign in with an API key.
	run(t, ctx, "open the console", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("#signin")))
	shoot(t, ctx, dir, "01-signin.png")
	run(t, ctx, "sign in",
		chromedp.SendKeys(chromedp.CSS("#key"), key),
		chromedp.Click(chromedp.CSS("#signin button")),
		chromedp.WaitVisible(chromedp.CSS("#playground")),
	)
	if got := text(t, ctx, "#viewer"); got != "alice" {
		t.Fatalf("signed in as %q, want alice", got)
	}
	shoot(t, ctx, dir, "02-playground.png")

	// Create a key: shown once, with a copy button (JavaScript).
	run(t, ctx, "create a key",
		chromedp.Navigate(base+"/keys"),
		chromedp.SendKeys(chromedp.CSS("#name"), "laptop"),
		chromedp.Click(chromedp.CSS("#create-key button")),
		chromedp.WaitVisible(chromedp.CSS("#new-key-value")),
		chromedp.WaitVisible(chromedp.CSS("#copy")),
	)
	newKey := text(t, ctx, "#new-key-value")
	if got := text(t, ctx, `#keys tbody tr:first-child .last-used`); got != "never" {
		t.Fatalf("the new key's last use reads %q, want never", got)
	}
	rec, err := f.svc.Authenticate(context.Background(), newKey)
	if err != nil || rec.Name != "laptop" {
		t.Fatalf("the key shown: %v, name %q; want a live key named laptop", err, rec.Name)
	}
	shoot(t, ctx, dir, "03-key-created.png")
	run(t, ctx, "reload the keys", chromedp.Navigate(base+"/keys"))
	html := value(t, ctx, "read the keys page", chromedp.OuterHTML(chromedp.CSS("html")))
	if strings.Contains(html, newKey) {
		t.Fatal("the new key is shown a second time")
	}

	// Revoke it.
	row := `tr[data-key-id="` + rec.ID + `"]`
	run(t, ctx, "revoke the key",
		chromedp.Click(chromedp.CSS(row+" button")),
		chromedp.WaitVisible(chromedp.CSS("#notice")),
	)
	if got := text(t, ctx, row+" .state"); got != "revoked" {
		t.Fatalf("the key's state reads %q, want revoked", got)
	}
	if _, err := f.svc.Authenticate(context.Background(), newKey); !errors.Is(err, imagegen.ErrUnauthorized) {
		t.Fatalf("the revoked key still authenticates: %v", err)
	}
	shoot(t, ctx, dir, "04-key-revoked.png")

	// Run a prompt: the task page follows it live to the image.
	run(t, ctx, "submit a prompt",
		chromedp.Navigate(base+"/playground"),
		chromedp.SendKeys(chromedp.CSS("#prompt"), "a lighthouse at dusk"),
		chromedp.SetValue(chromedp.CSS("#aspect_ratio"), "16:9"),
		chromedp.Click(chromedp.CSS("#generate")),
		chromedp.WaitVisible(chromedp.CSS("#task")),
	)
	if first := text(t, ctx, "#status"); first != "pending" && first != "processing" {
		t.Fatalf("the task page opened with status %q; the model takes a second, so it should still run", first)
	}
	shoot(t, ctx, dir, "05-task-running.png")
	run(t, ctx, "wait for the image",
		chromedp.WaitVisible(chromedp.CSS("#images img")), // added by the long-poll, no reload
	)
	value(t, ctx, "image loaded", chromedp.Poll[bool](`document.querySelector('#images img').complete && document.querySelector('#images img').naturalWidth > 0`, chromedp.WithPollingTimeout(10*time.Second)))
	width := eval[int](t, ctx, `document.querySelector('#images img').naturalWidth`)
	taskID := value(t, ctx, "task id", chromedp.AttributeValue(chromedp.CSS("#task"), "data-id")).Value
	if width != 256 {
		t.Fatalf("the image is %d px wide, want 256 (16:9 at a long side of 256)", width)
	}
	if got := text(t, ctx, "#status"); got != "success" {
		t.Fatalf("status %q after the image appeared", got)
	}
	if progress, finished := text(t, ctx, "#shown-progress"), text(t, ctx, "#shown-finished"); progress != "Done: 1 image." || finished == "not yet" {
		t.Fatalf("after the live update the page says %q, finished %q; want it done, with its time", progress, finished)
	}
	if got := text(t, ctx, "#balance"); got != "9" {
		t.Fatalf("credits left %q, want 9", got)
	}
	if download := eval[int](t, ctx, `document.querySelectorAll('#images a[download]').length`); download != 1 {
		t.Fatalf("%d download links, want 1", download)
	}
	shoot(t, ctx, dir, "06-task-result.png")

	// The charge is in the ledger.
	run(t, ctx, "open credits", chromedp.Navigate(base+"/credits"), chromedp.WaitVisible(chromedp.CSS("#ledger")))
	ledger := text(t, ctx, "#ledger tbody tr:first-child")
	if !strings.Contains(ledger, "charge") || !strings.Contains(ledger, "-1") || !strings.Contains(ledger, taskID) || strings.Contains(ledger, "task:"+taskID) {
		t.Fatalf("the newest ledger entry reads %q, want the charge of task %s", ledger, taskID)
	}
	shoot(t, ctx, dir, "07-credits.png")

	run(t, ctx, "open tasks", chromedp.Navigate(base+"/tasks"), chromedp.WaitVisible(chromedp.CSS("#tasks img.thumb")))
	shoot(t, ctx, dir, "08-tasks.png")

	// A prompt with markup is shown as text.
	const evil = `<img src=x onerror="document.title='pwned'">`
	run(t, ctx, "submit markup",
		chromedp.Navigate(base+"/playground"),
		chromedp.SendKeys(chromedp.CSS("#prompt"), evil),
		chromedp.Click(chromedp.CSS("#generate")),
		chromedp.WaitVisible(chromedp.CSS("#task")),
	)
	injected := eval[int](t, ctx, `document.querySelectorAll('#prompt img').length`)
	title := value(t, ctx, "title", chromedp.Title())
	if got := text(t, ctx, "#prompt"); got != evil || injected != 0 || title == "pwned" {
		t.Fatalf("prompt shown as %q with %d injected elements, title %q; want the text itself", got, injected, title)
	}
	shoot(t, ctx, dir, "09-markup-prompt-as-text.png")

	// Another user's task is refused.
	f.user(t, "bob", 1)
	bobsTask := f.submit(t, "bob", "bob's private prompt")
	res, err := chromedp.RunResponse(ctx, chromedp.Navigate(base+"/tasks/"+bobsTask))
	if err != nil {
		t.Fatal(err)
	}
	html = value(t, ctx, "read the refusal", chromedp.OuterHTML(chromedp.CSS("html")))
	if res.Status != 404 || strings.Contains(html, "private prompt") {
		t.Fatalf("bob's task: status %d; want 404 without his prompt", res.Status)
	}
	if got := eval[string](t, ctx, `getComputedStyle(document.getElementById('error')).color`); got != "rgb(180, 35, 24)" {
		t.Fatalf("the 404's message is drawn in %s, want the error red (rgb(180, 35, 24))", got)
	}
	shoot(t, ctx, dir, "10-other-users-task-404.png")

	// An operator looks the user up.
	opsKey := f.user(t, "ops", 0)
	run(t, ctx, "sign out", chromedp.Click(chromedp.CSS(".who button")), chromedp.WaitVisible(chromedp.CSS("#signin")))
	if got := text(t, ctx, "#notice"); !strings.HasPrefix(got, "You are signed out.") {
		t.Fatalf("after signing out the page says %q, want a confirmation", got)
	}
	shoot(t, ctx, dir, "11-signed-out.png")
	run(t, ctx, "sign in as the operator",
		chromedp.SendKeys(chromedp.CSS("#key"), opsKey),
		chromedp.Click(chromedp.CSS("#signin button")),
		chromedp.WaitVisible(chromedp.CSS("#playground")),
		chromedp.Navigate(base+"/ops?owner=alice"),
		chromedp.WaitVisible(chromedp.CSS("#tasks")),
	)
	if got := text(t, ctx, "#balance"); got != "8" {
		t.Fatalf("the operator sees alice's balance as %q, want 8", got)
	}
	shoot(t, ctx, dir, "12-operator-user-lookup.png")

	// The dashboard shows the provider calls the workers wrote.
	if err := f.svc.FlushProviderStats(context.Background()); err != nil {
		t.Fatal(err)
	}
	run(t, ctx, "open the dashboard", chromedp.Navigate(base+"/ops"), chromedp.WaitVisible(chromedp.CSS("#providers")))
	if got := text(t, ctx, "#providers [data-provider-success]"); got != "100%" {
		t.Fatalf("the placeholder model's calls succeeded %q, want 100%%", got)
	}
	// The last hour as charts: drawn SVG, not empty boxes.
	drawn := eval[int](t, ctx, `[...document.querySelectorAll('figure.chart svg')].filter(s => s.getBoundingClientRect().height > 50).length`)
	bars := eval[int](t, ctx, `document.querySelectorAll('#chart-finished rect.bar').length`)
	if drawn < 2 || bars == 0 {
		t.Fatalf("the operator page draws %d charts (%d bars of finished tasks); want at least 2, with bars", drawn, bars)
	}
	shoot(t, ctx, dir, "13-operator-dashboard.png")

	// On a phone: no page scrolls sideways, and table cells wrap between words.
	run(t, ctx, "a phone's screen", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateScale(2)))
	phonePage(t, ctx, dir, base+"/ops", "14-phone-operator.png")
	run(t, ctx, "sign out", chromedp.Click(chromedp.CSS(".who button")), chromedp.WaitVisible(chromedp.CSS("#signin")))
	run(t, ctx, "sign in as alice",
		chromedp.SendKeys(chromedp.CSS("#key"), key),
		chromedp.Click(chromedp.CSS("#signin button")),
		chromedp.WaitVisible(chromedp.CSS("#playground")),
	)
	phonePage(t, ctx, dir, base+"/tasks", "15-phone-tasks.png")
	phonePage(t, ctx, dir, base+"/tasks/"+taskID, "16-phone-task.png")
	phonePage(t, ctx, dir, base+"/credits", "17-phone-credits.png")
	phonePage(t, ctx, dir, base+"/keys", "18-phone-keys.png")
}

// brokenWords lists the words in table cells and definition lists that
// are drawn on more than one line (a word broken mid-word). Words longer
// than 30 characters (a URL) may be broken when they cannot fit.
const brokenWords = `(() => {
  const out = [];
  for (const cell of document.querySelectorAll('td, dd')) {
    const walk = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {
      for (const m of n.data.matchAll(/[^\s-]+/g)) { // a break after a hyphen is between words
        if (m[0].length > 30) { continue; }
        const r = document.createRange();
        r.setStart(n, m.index);
        r.setEnd(n, m.index + m[0].length);
        const lines = new Set([...r.getClientRects()].filter(b => b.width > 0).map(b => Math.round(b.top)));
        if (lines.size > 1) { out.push(m[0]); }
      }
    }
  }
  return out;
})()`

// phonePage opens url on the phone's screen, checks it, and saves a
// screenshot as name.
func phonePage(t *testing.T, ctx context.Context, dir, url, name string) {
	t.Helper()
	run(t, ctx, "open "+url, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS("main")))
	if over := eval[int](t, ctx, `document.documentElement.scrollWidth - window.innerWidth`); over > 0 {
		t.Errorf("%s is %d px wider than the phone's screen", url, over)
	}
	if broken := eval[[]string](t, ctx, brokenWords); len(broken) > 0 {
		t.Errorf("%s breaks words mid-word on a phone: %q", url, broken)
	}
	shoot(t, ctx, dir, name)
}
