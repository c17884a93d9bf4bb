package client

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/imagegen/imagegen"
)

// The Client's default http.Client refuses a redirect to plain http
// that would carry the API key (net/http copies Authorization onto a
// redirect to the same host, whatever its scheme, before it asks
// CheckRedirect), and follows the others as net/http does.
func TestDefaultClientRefusesToSendTheKeyInClear(t *testing.T) {
	c, err := New("https://api.example", "igk_key")
	if err != nil {
		t.Fatal(err)
	}
	get := func(url string, key bool) *http.Request { return newRequest(t, url, key) }
	check := c.hc.CheckRedirect
	if check == nil {
		t.Fatal("the default http.Client follows any redirect")
	}
	from := []*http.Request{get("https://api.example/api/v1/images/a", true)}
	if err := check(get("http://api.example/api/v1/images/a", true), from); !errors.Is(err, errDowngrade) {
		t.Errorf("a redirect to http with the key: %v; want it refused", err)
	}
	if err := check(get("http://cdn.example/a.png", false), from); err != nil {
		t.Errorf("a redirect to another host's http, without the key: %v; want it followed", err)
	}
	if err := check(get("https://api.example/b", true), from); err != nil {
		t.Errorf("a redirect to https: %v; want it followed", err)
	}
	ten := make([]*http.Request, 10)
	for i := range ten {
		ten[i] = from[0]
	}
	if err := check(get("https://api.example/b", true), ten); err == nil {
		t.Error("an 11th redirect was followed")
	}
}

// A redirect to another origin than the API's (another port of the same
// host, a subdomain) is followed without the API key: net/http keeps
// Authorization on a redirect to the same host name whatever its port,
// and to any subdomain, so a server (or a proxy before it) that sent a
// request on to another service on its host, or to a subdomain someone
// else serves, had that service handed the key. A redirect within the
// API's origin keeps it.
func TestDefaultClientKeepsTheKeyToTheAPIOrigin(t *testing.T) {
	var otherAuth []string
	other := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherAuth = append(otherAuth, r.Header.Get("Authorization"))
		http.Error(w, `{"error":{"code":"unauthorized","message":"no key"}}`, http.StatusUnauthorized)
	}))
	defer other.Close()
	var apiAuth []string
	api := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/credits":
			http.Redirect(w, r, other.URL+"/api/v1/credits", http.StatusTemporaryRedirect)
		case "/api/v1/tasks/a":
			http.Redirect(w, r, "/api/v1/tasks/b", http.StatusTemporaryRedirect)
		default:
			apiAuth = append(apiAuth, r.Header.Get("Authorization"))
			w.Write([]byte(`{"task_id":"b","status":"pending"}`))
		}
	}))
	defer api.Close()
	c, err := New(api.URL, "igk_secretkey")
	if err != nil {
		t.Fatal(err)
	}
	c.hc.Transport = api.Client().Transport // trusts both servers' certificate

	if _, err := c.Credits(context.Background()); !errors.Is(err, imagegen.ErrUnauthorized) {
		t.Errorf("credits redirected to another port: %v; want the other server's 401", err)
	}
	if len(otherAuth) != 1 || otherAuth[0] != "" {
		t.Errorf("the server on another port of the API's host got Authorization %q; want one request without it", otherAuth)
	}
	if _, err := c.Task(context.Background(), "a"); err != nil {
		t.Fatalf("a redirect within the API's origin: %v", err)
	}
	if len(apiAuth) != 1 || apiAuth[0] != "Bearer igk_secretkey" {
		t.Errorf("a redirect within the API's origin carried Authorization %q; want the key", apiAuth)
	}

	// A subdomain is another origin too (net/http keeps the key for it).
	from := []*http.Request{newRequest(t, "https://api.example/api/v1/tasks/a", true)}
	to := newRequest(t, "https://files.api.example/a", true)
	if err := c.hc.CheckRedirect(to, from); err != nil {
		t.Fatalf("a redirect to a subdomain: %v; want it followed", err)
	}
	if got := to.Header.Get("Authorization"); got != "" {
		t.Errorf("a redirect to a subdomain carries Authorization %q", got)
	}
}

func newRequest(t *testing.T, url string, key bool) *http.Request {
	t.Helper()
	r, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if key {
		r.Header.Set("Authorization", "Bearer igk_key")
	}
	return r
}
