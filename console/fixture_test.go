package console_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/console"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/model/placeholder"
	"github.com/imagegen/imagegen/server"
	"github.com/imagegen/imagegen/store/memory"
)

// fixture is the standard stack with the console at /console/ (key
// sign-in, operator "ops"), served by an httptest server, workers running.
type fixture struct {
	ts    *httptest.Server
	svc   *imagegen.Service
	store imagegen.Store // the service's
	cfg   console.Config // the console's configuration
	con   *console.Console
}

type fixtureConfig struct {
	model     imagegen.Model // default: placeholder pictures, 256 px
	rateLimit int
	limits    imagegen.Limits // the workers' caps
	clock     imagegen.Clock  // default: the system's
	store     imagegen.Store  // default: a memory store
	tls       bool            // serve over https (httptest's certificate)
}

func newFixture(t *testing.T, fc fixtureConfig) *fixture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	mux := http.NewServeMux()
	ts := httptest.NewUnstartedServer(mux)
	if fc.tls {
		ts.StartTLS()
	} else {
		ts.Start()
	}
	if fc.model == nil {
		m, err := placeholder.New(placeholder.Config{LongSide: 256})
		if err != nil {
			t.Fatal(err)
		}
		fc.model = m
	}
	quiet := slog.New(slog.DiscardHandler)
	var store imagegen.Store = fc.store
	if store == nil {
		store = testenv.Memory(t, memory.Config{})
	}
	stack, err := server.New(ctx, server.Config{
		Service:   imagegen.Config{Store: store, Model: fc.model, Logger: quiet, Clock: fc.clock, WorkerConfig: imagegen.WorkerConfig{PollInterval: 20 * time.Millisecond, Limits: fc.limits}},
		PublicURL: ts.URL,
		RateLimit: fc.rateLimit,
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg := console.Config{
		Service:      stack.Service(),
		Store:        store,
		API:          stack.API(),
		Limiter:      stack.Limiter(),
		AuthFailures: stack.AuthFailures(),
		Prefix:       "/console",
		KeySignIn:    true,
		Operators:    []string{"ops"},
		Logger:       quiet,
	}
	con, err := console.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	stack.Register(mux)
	mux.Handle("/console/", con)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = stack.Run(ctx) }()
	t.Cleanup(func() { cancel(); ts.Close(); wg.Wait() })
	return &fixture{ts: ts, svc: stack.Service(), store: store, cfg: cfg, con: con}
}

// otherProcess is a second console on the fixture's store, served
// apart, as another process of a deployment would be: it shares only
// what the store shares (the session secret, sessions, tasks).
func (f *fixture) otherProcess(t *testing.T) *fixture {
	t.Helper()
	cfg := f.cfg
	con, err := console.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/console/", con)
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return &fixture{ts: ts, svc: f.svc, cfg: cfg}
}

// user makes owner with credits and returns one of their API keys.
func (f *fixture) user(t *testing.T, owner string, credits int64) string {
	t.Helper()
	key, _, err := f.svc.CreateKey(context.Background(), owner, imagegen.WithKeyName("first"))
	if err != nil {
		t.Fatal(err)
	}
	if credits > 0 {
		if _, err := f.svc.Grant(context.Background(), owner, credits, uuid.NewString()); err != nil {
			t.Fatal(err)
		}
	}
	return key
}

// submit makes a text-to-image task of owner through the service and
// returns its id.
func (f *fixture) submit(t *testing.T, owner, prompt string) string {
	t.Helper()
	sub, err := f.svc.Submit(context.Background(), owner, imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: prompt})
	if err != nil {
		t.Fatal(err)
	}
	return sub.TaskID
}

// browser is an HTTP client with its own cookie jar; it follows
// redirects.
type browser struct {
	t      *testing.T
	f      *fixture
	client *http.Client
}

func (f *fixture) browser(t *testing.T) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, f: f, client: &http.Client{Jar: jar, Transport: f.ts.Client().Transport, Timeout: 30 * time.Second}}
}

type page struct {
	status int
	header http.Header
	body   string
	url    string
}

func (b *browser) get(path string) page {
	b.t.Helper()
	res, err := b.client.Get(b.f.ts.URL + path)
	if err != nil {
		b.t.Fatal(err)
	}
	return read(b.t, res)
}

func (b *browser) post(path string, form url.Values) page {
	b.t.Helper()
	res, err := b.client.PostForm(b.f.ts.URL+path, form)
	if err != nil {
		b.t.Fatal(err)
	}
	return read(b.t, res)
}

func read(t *testing.T, res *http.Response) page {
	t.Helper()
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return page{status: res.StatusCode, header: res.Header, body: string(body), url: res.Request.URL.Path}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf returns the CSRF token of the page at path.
func (b *browser) csrf(path string) string {
	b.t.Helper()
	p := b.get(path)
	m := csrfField.FindStringSubmatch(p.body)
	if m == nil {
		b.t.Fatalf("no CSRF token on %s (status %d)", path, p.status)
	}
	return m[1]
}

// submitForm posts form to path with the CSRF token of page from.
func (b *browser) submitForm(from, path string, form url.Values) page {
	b.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	form.Set("csrf", b.csrf(from))
	return b.post(path, form)
}

// sessionCookie returns the browser's console session cookie (under
// its __Host- name over https).
func (b *browser) sessionCookie() *http.Cookie {
	b.t.Helper()
	u, _ := url.Parse(b.f.ts.URL + "/console/")
	for _, c := range b.client.Jar.Cookies(u) {
		if c.Name == "imagegen_console_session" || c.Name == "__Host-imagegen_console_session" {
			return c
		}
	}
	b.t.Fatal("no session cookie")
	return nil
}

// setSessionCookie makes value the browser's console session cookie, as
// a copied cookie would be.
func (b *browser) setSessionCookie(value string) {
	u, _ := url.Parse(b.f.ts.URL + "/console/")
	b.client.Jar.SetCookies(u, []*http.Cookie{{Name: "imagegen_console_session", Value: value, Path: "/console/"}})
}

func (b *browser) signIn(key string) {
	b.t.Helper()
	p := b.submitForm("/console/signin", "/console/signin", url.Values{"key": {key}})
	if p.status != http.StatusOK || p.url != "/console/playground" {
		b.t.Fatalf("sign in: got %d at %s, want 200 at /console/playground", p.status, p.url)
	}
}

var taskURL = regexp.MustCompile(`^/console/tasks/([0-9a-f-]{36})$`)

// play submits a prompt in the playground and returns the task id.
func (b *browser) play(prompt string) string {
	b.t.Helper()
	p := b.submitForm("/console/playground", "/console/playground", url.Values{"scene": {"text-to-image"}, "prompt": {prompt}, "aspect_ratio": {"1:1"}})
	m := taskURL.FindStringSubmatch(p.url)
	if p.status != http.StatusOK || m == nil {
		b.t.Fatalf("playground: got %d at %s, want a task page", p.status, p.url)
	}
	return m[1]
}

func contains(t *testing.T, p page, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(p.body, w) {
			t.Errorf("page %s (status %d) lacks %q", p.url, p.status, w)
		}
	}
}
