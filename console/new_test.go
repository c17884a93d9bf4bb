package console_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/console"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/store/memory"
)

func TestNewNamesTheBadField(t *testing.T) {
	store := testenv.Memory(t, memory.Config{})
	svc, err := imagegen.New(imagegen.Config{Store: store, Model: imagegentest.NewModel(1)})
	if err != nil {
		t.Fatal(err)
	}
	urls := func(*imagegen.Task) []string { return nil }
	who := func(*http.Request) (string, bool, error) { return "", false, nil }
	good := console.Config{Service: svc, Store: store, ImageURLs: urls, Identify: who}
	cases := []struct {
		name string
		edit func(*console.Config)
		want string
	}{
		{"no service", func(c *console.Config) { c.Service = nil }, "Config.Service"},
		{"no store", func(c *console.Config) { c.Store = nil }, "Config.Store"},
		{"no image URLs", func(c *console.Config) { c.ImageURLs = nil }, "Config.API or Config.ImageURLs"},
		{"no sign-in", func(c *console.Config) { c.Identify = nil }, "Config.Identify"},
		{"relative prefix", func(c *console.Config) { c.Prefix = "console" }, "Config.Prefix"},
		// Redirects go to the prefix: a browser takes "//host" and "/\host"
		// for another site (and the mux refused "//host" with a panic).
		{"prefix naming a host", func(c *console.Config) { c.Prefix = "//evil.example" }, "Config.Prefix"},
		{"prefix naming a host with a backslash", func(c *console.Config) { c.Prefix = `/\evil.example` }, "Config.Prefix"},
		{"prefix with a dot segment", func(c *console.Config) { c.Prefix = "/a/../console" }, "Config.Prefix"},
		{"prefix with a line break", func(c *console.Config) { c.Prefix = "/console\nX-Evil: 1" }, "Config.Prefix"},
		{"image origin with a path", func(c *console.Config) { c.ImageOrigins = []string{"https://img.example.com/x"} }, "Config.ImageOrigins"},
		{"image origin injecting a directive", func(c *console.Config) { c.ImageOrigins = []string{"https://a.example; script-src *"} }, "Config.ImageOrigins"},
		{"short secret", func(c *console.Config) { c.Secret = []byte("short") }, "Config.Secret"},
		{"negative waits", func(c *console.Config) { c.MaxSessionWaits = -1 }, "Config.MaxSessionWaits"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := good
			tc.edit(&c)
			if _, err := console.New(context.Background(), c); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want an error naming %s", err, tc.want)
			}
		})
	}
	if _, err := console.New(context.Background(), good); err != nil {
		t.Fatalf("New with a good config: %v", err)
	}
}

func TestIdentifyDecidesWhoIsSignedIn(t *testing.T) {
	store := testenv.Memory(t, memory.Config{})
	svc, err := imagegen.New(imagegen.Config{Store: store, Model: imagegentest.NewModel(1)})
	if err != nil {
		t.Fatal(err)
	}
	con, err := console.New(context.Background(), console.Config{
		Service:   svc,
		Store:     store,
		ImageURLs: func(*imagegen.Task) []string { return nil },
		Prefix:    "/c",
		Identify: func(r *http.Request) (string, bool, error) {
			switch r.Header.Get("X-Test-User") {
			case "":
				return "", false, nil
			case "expired":
				return "", false, fmt.Errorf("session expired: %w", imagegen.ErrUnauthorized)
			case "broken":
				return "", false, errors.New("session store down")
			case "root":
				return "root", true, nil
			default:
				return r.Header.Get("X-Test-User"), false, nil
			}
		},
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	for user, want := range map[string]int{"": 401, "expired": 401, "broken": 500, "carol": 200, "root": 200} {
		// The operator page is 404 for everybody who may not see it, signed in or not.
		for path, wantHere := range map[string]int{"/c/credits": want, "/c/ops": map[string]int{"": 404, "expired": 404, "carol": 404, "root": 200}[user]} {
			if wantHere == 0 {
				wantHere = want
			}
			r := httptest.NewRequest(http.MethodGet, path, nil)
			r.Header.Set("X-Test-User", user)
			w := httptest.NewRecorder()
			con.ServeHTTP(w, r)
			if w.Code != wantHere {
				t.Errorf("user %q GET %s: status %d, want %d", user, path, w.Code, wantHere)
			}
			if w.Header().Get("Content-Security-Policy") == "" {
				t.Errorf("user %q GET %s: no Content-Security-Policy", user, path)
			}
		}
	}
	w := httptest.NewRecorder()
	con.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/c/signin", nil))
	if w.Code != http.StatusNotFound {
		t.Errorf("GET /c/signin with the app's login: status %d, want 404 (key sign-in is off)", w.Code)
	}
}
