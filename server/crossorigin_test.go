package server_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/httpapi"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/server"
	"github.com/imagegen/imagegen/store/memory"
)

// A page on another site cannot spend a signed-in user's credits through
// the host app's cookie login: the browser's cross-site POST (which it
// sends with the site's cookies, and, with no Content-Type, without a
// CORS preflight) is never authenticated by Login and is answered 401,
// nothing charged. The same POST from the app's own pages, from a
// trusted origin, or with an API key is served, and so is a cross-site
// GET (which changes nothing).
func TestLoginRefusesCrossSiteRequests(t *testing.T) {
	is := is.New(t)
	c := config(testenv.Memory(t, memory.Config{}))
	c.Login = httpapi.AuthenticatorFunc(func(r *http.Request) (httpapi.Principal, error) {
		if ck, err := r.Cookie("session"); err == nil && ck.Value == "alice" {
			return httpapi.Principal{Owner: "alice"}, nil
		}
		return httpapi.Principal{}, imagegen.ErrUnauthorized
	})
	c.LoginTrustedOrigins = []string{"https://shop.example.com"}
	srv, err := server.New(ctx, c)
	is.NoErr(err)
	_, err = srv.Service().Grant(ctx, "alice", 10, "signup")
	is.NoErr(err)
	key, _, err := srv.Service().CreateKey(ctx, "alice")
	is.NoErr(err)

	send := func(method, path string, header map[string]string) int {
		t.Helper()
		var body *strings.Reader
		if method == http.MethodPost {
			body = strings.NewReader(`{"scene":"text-to-image","prompt":"a kite"}`)
		} else {
			body = strings.NewReader("")
		}
		r := httptest.NewRequest(method, "https://img.example.com"+path, body)
		r.AddCookie(&http.Cookie{Name: "session", Value: "alice"})
		for k, v := range header {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, r)
		return w.Code
	}
	balance := func() int64 {
		b, err := srv.Service().Balance(ctx, "alice")
		is.NoErr(err)
		return b
	}

	is.Equal(send("POST", "/api/v1/generate", map[string]string{"Sec-Fetch-Site": "cross-site"}), http.StatusUnauthorized)
	is.Equal(send("POST", "/api/v1/generate", map[string]string{"Origin": "https://evil.example.net"}), http.StatusUnauthorized) // an older browser: Origin only
	is.Equal(balance(), int64(10))                                                                                               // nothing charged

	is.Equal(send("POST", "/api/v1/generate", map[string]string{"Sec-Fetch-Site": "same-origin"}), http.StatusCreated)
	is.Equal(send("POST", "/api/v1/generate", nil), http.StatusCreated) // not a browser
	is.Equal(send("POST", "/api/v1/generate", map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://shop.example.com"}), http.StatusCreated)
	is.Equal(send("POST", "/api/v1/generate", map[string]string{"Sec-Fetch-Site": "cross-site", "Authorization": "Bearer " + key}), http.StatusCreated)
	is.Equal(send("GET", "/api/v1/credits", map[string]string{"Sec-Fetch-Site": "cross-site"}), http.StatusOK)
	is.Equal(balance(), int64(6))

	c.LoginTrustedOrigins = []string{"shop.example.com"} // not an origin
	_, err = server.New(ctx, c)
	is.True(err != nil)
}
