package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/client"
	"github.com/imagegen/imagegen/wire"
)

// newTestApp serves the app on a loopback test server, with callbacks
// allowed to reach loopback, and runs its workers until the test ends.
func newTestApp(t *testing.T) (*app, *httptest.Server) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var a *app
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { a.mux.ServeHTTP(w, r) }))
	a, err := newApp(ctx, srv.URL, imagegen.Config{AllowHTTPCallbacks: true, WorkerConfig: imagegen.WorkerConfig{PollInterval: 10 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = a.images.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; srv.Close() })
	return a, srv
}

func call(t *testing.T, srv *httptest.Server, method, path, body string) *http.Response {
	t.Helper()
	r, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.AddCookie(&http.Cookie{Name: "session", Value: "alice"})
	r.Header.Set("Idempotency-Key", "click-1")
	res, err := srv.Client().Do(r)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = res.Body.Close() })
	return res
}

func text(t *testing.T, res *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestWebAndAPIShareTheBalance(t *testing.T) {
	is := is.New(t)
	_, srv := newTestApp(t)

	is.Equal(call(t, srv, "GET", "/", "").StatusCode, http.StatusOK) // the app's own page still works
	is.Equal(call(t, srv, "POST", "/poster", "").StatusCode, http.StatusOK)
	is.True(strings.Contains(text(t, call(t, srv, "POST", "/poster", "")), "already charged")) // same click, one charge

	res := call(t, srv, "POST", "/api/v1/generate", `{"scene":"text-to-image","prompt":"a poster"}`)
	is.Equal(res.StatusCode, http.StatusCreated)
	var sub wire.Submitted
	is.NoErr(json.NewDecoder(res.Body).Decode(&sub))
	is.Equal(sub.CreditsUsed, int64(1))
	is.Equal(sub.CreditsRemaining, int64(18)) // 20 - 1 web - 1 API
	is.Equal(strings.TrimSpace(text(t, call(t, srv, "GET", "/balance", ""))), "18")

	// Without a session or key the API answers 401 in its own JSON shape.
	res, err := srv.Client().Get(srv.URL + "/api/v1/tasks/x")
	is.NoErr(err)
	defer res.Body.Close()
	is.Equal(res.StatusCode, http.StatusUnauthorized)
	is.True(strings.Contains(text(t, res), `"code":"unauthorized"`))
}

// TestCallbackIsDelivered: the one server.New call also delivers
// callbacks, signed with the user's secret.
func TestCallbackIsDelivered(t *testing.T) {
	is := is.New(t)
	a, srv := newTestApp(t)
	key, _, err := a.svc.CreateKey(context.Background(), "bob")
	is.NoErr(err)
	c, err := client.New(srv.URL, key)
	is.NoErr(err)
	secret, err := c.WebhookSecret(context.Background())
	is.NoErr(err)

	got := make(chan *client.Task, 1)
	v := client.WebhookVerifier{Secret: secret}
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		task, err := v.Receive(r)
		if err != nil {
			t.Errorf("callback refused: %v", err)
			http.Error(w, "bad callback", http.StatusBadRequest)
			return
		}
		got <- task
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()

	sub, err := c.Submit(context.Background(), imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "a kite", CallbackURL: receiver.URL + "/hook"})
	is.NoErr(err)
	select {
	case task := <-got:
		is.Equal(task.TaskID, sub.TaskID)
		is.Equal(string(task.Status), "success")
		is.Equal(len(task.Images), 1)
		is.True(strings.HasPrefix(task.Images[0], srv.URL+"/api/v1/images/")) // built from PublicURL
	case <-time.After(20 * time.Second):
		t.Fatal("no callback within 20s")
	}
}

func TestConsoleBehindTheAppsLogin(t *testing.T) {
	is := is.New(t)
	_, srv := newTestApp(t)
	get := func(cookie string) (*http.Response, string) {
		r, err := http.NewRequest(http.MethodGet, srv.URL+"/console/credits", nil)
		is.NoErr(err)
		if cookie != "" {
			r.AddCookie(&http.Cookie{Name: "session", Value: cookie})
		}
		res, err := srv.Client().Do(r)
		is.NoErr(err)
		t.Cleanup(func() { _ = res.Body.Close() })
		return res, text(t, res)
	}
	res, _ := get("")
	is.Equal(res.StatusCode, http.StatusUnauthorized) // the app's login is required
	res, body := get("bob")
	is.Equal(res.StatusCode, http.StatusOK)
	is.True(strings.Contains(body, `id="viewer">bob<`))
	is.True(strings.Contains(body, `id="balance">20<`)) // bob's sign-up credits
	is.True(strings.Contains(res.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'"))
}
