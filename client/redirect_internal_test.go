package client

import (
	"errors"
	"net/http"
	"testing"
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
	get := func(url string, key bool) *http.Request {
		r, err := http.NewRequest("GET", url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if key {
			r.Header.Set("Authorization", "Bearer igk_key")
		}
		return r
	}
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
