package console_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/imagegen/imagegen/console"
)

// csrfSetCookie returns the CSRF cookie that the sign-in page sets on a
// browser without cookies, served by h.
func csrfSetCookie(t *testing.T, h http.Handler, target string) *http.Cookie {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
	for _, c := range rec.Result().Cookies() {
		if c.Name == "imagegen_console_csrf" || c.Name == "__Host-imagegen_console_csrf" {
			return c
		}
	}
	t.Fatalf("GET %s set no CSRF cookie", target)
	return nil
}

// Where cookies are Secure (the request came over TLS, or
// Config.SecureCookies says a proxy terminates it) they carry the
// __Host- prefix, Path=/ and no Domain; over plain http (the default on
// loopback, where browsers refuse __Host- cookies) the plain names,
// scoped to the prefix.
func TestCookiesCarryTheHostPrefixWhereSecure(t *testing.T) {
	f := newFixture(t, fixtureConfig{})
	behindProxy := f.cfg
	behindProxy.SecureCookies = true
	proxied, err := console.New(t.Context(), behindProxy)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name       string
		h          http.Handler
		target     string
		want, path string
		secure     bool
	}{
		{"plain http", f.con, "http://127.0.0.1/console/signin", "imagegen_console_csrf", "/console/", false},
		{"TLS", f.con, "https://console.example/console/signin", "__Host-imagegen_console_csrf", "/", true},
		{"SecureCookies", proxied, "http://127.0.0.1/console/signin", "__Host-imagegen_console_csrf", "/", true},
	}
	for _, c := range cases {
		ck := csrfSetCookie(t, c.h, c.target)
		if ck.Name != c.want || ck.Path != c.path || ck.Secure != c.secure || ck.Domain != "" || !ck.HttpOnly {
			t.Errorf("%s: the CSRF cookie is %q (Path %q, Secure %v, Domain %q, HttpOnly %v), want %q (Path %q, Secure %v, no Domain, HttpOnly)",
				c.name, ck.Name, ck.Path, ck.Secure, ck.Domain, ck.HttpOnly, c.want, c.path, c.secure)
		}
	}
}

// Over https a browser signs in, browses and signs out with __Host-
// cookies; a cookie under the plain name is not read there (a cookie
// set over plain http, or by a sibling domain, cannot carry the prefix).
func TestSignInOverTLSUsesHostPrefixedCookies(t *testing.T) {
	f := newFixture(t, fixtureConfig{tls: true})
	b := f.browser(t)
	b.signIn(f.user(t, "alice", 5))
	root, _ := url.Parse(f.ts.URL + "/")
	names := map[string]bool{}
	for _, c := range b.client.Jar.Cookies(root) { // Path=/: sent to the root too
		names[c.Name] = true
	}
	if !names["__Host-imagegen_console_session"] || !names["__Host-imagegen_console_csrf"] || names["imagegen_console_session"] {
		t.Fatalf("cookies after signing in over https: %v, want the __Host- session and CSRF cookies", names)
	}
	contains(t, b.get("/console/credits"), `id="viewer">alice<`)

	plain := f.browser(t)
	u, _ := url.Parse(f.ts.URL + "/console/")
	plain.client.Jar.SetCookies(u, []*http.Cookie{{Name: "imagegen_console_session", Value: b.sessionCookie().Value, Path: "/console/"}})
	if p := plain.get("/console/credits"); p.url != "/console/signin" {
		t.Errorf("the session under the plain name over https reached %s, want the sign-in page", p.url)
	}

	b.submitForm("/console/credits", "/console/signout", nil)
	if p := b.get("/console/credits"); p.url != "/console/signin" {
		t.Errorf("after signing out over https, /console/credits went to %s", p.url)
	}
}
