package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/httpapi"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/server"
	"github.com/imagegen/imagegen/store/memory"
	"github.com/imagegen/imagegen/wire"
)

var ctx = context.Background()

func config(store imagegen.Store) server.Config {
	return server.Config{
		Service:   imagegen.Config{Store: store, Model: imagegentest.NewModel(1), Clock: imagegentest.NewClock(time.Time{})},
		PublicURL: "https://img.example.com",
	}
}

func TestNewNamesTheMissingField(t *testing.T) {
	store := testenv.Memory(t, memory.Config{})
	cases := []struct {
		name string
		edit func(*server.Config)
		want string
	}{
		{"no store", func(c *server.Config) { c.Service.Store = nil }, "Config.Store"},
		{"no model", func(c *server.Config) { c.Service.Model = nil }, "Config.Model"},
		{"no public URL", func(c *server.Config) { c.PublicURL = "" }, "Config.PublicURL is required"},
		{"relative public URL", func(c *server.Config) { c.PublicURL = "img.example.com" }, "Config.PublicURL must be"},
		{"public URL with a query", func(c *server.Config) { c.PublicURL = "https://x.example?a=1" }, "Config.PublicURL must be"},
		{"public URL with credentials", func(c *server.Config) { c.PublicURL = "https://u:hunter2@x.example" }, `must be an absolute http(s) URL without credentials, query or fragment (got "https://[redacted]@x.example")`},
		{"negative rate limit", func(c *server.Config) { c.RateLimit = -1 }, "Config.RateLimit"},
		{"short signing key", func(c *server.Config) { c.SigningKey = []byte("short") }, "SigningKey"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := config(store)
			tc.edit(&c)
			_, err := server.New(ctx, c)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: got %v, want an error naming %q", err, tc.want)
			}
		})
	}
}

func do(t *testing.T, h http.Handler, method, path, key, body string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	if key != "" {
		r.Header.Set("Authorization", "Bearer "+key)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// The default per-key limit is the interface's 10 requests a minute.
func TestDefaultRateLimitIsTenAMinute(t *testing.T) {
	is := is.New(t)
	srv, err := server.New(ctx, config(testenv.Memory(t, memory.Config{})))
	is.NoErr(err)
	key, _, err := srv.Service().CreateKey(ctx, "alice")
	is.NoErr(err)
	for range 10 {
		is.Equal(do(t, srv, "GET", "/api/v1/credits", key, "").Code, http.StatusOK)
	}
	w := do(t, srv, "GET", "/api/v1/credits", key, "")
	is.Equal(w.Code, http.StatusTooManyRequests)
	is.True(w.Header().Get("Retry-After") != "")
}

// Two servers on one store sign image URLs with the same key (kept in the
// store), so a URL from one is served by the other and by a restart.
func TestSigningKeySharedThroughTheStore(t *testing.T) {
	is := is.New(t)
	store := testenv.Memory(t, memory.Config{})
	a, err := server.New(ctx, config(store))
	is.NoErr(err)
	b, err := server.New(ctx, config(store))
	is.NoErr(err)

	key, _, err := a.Service().CreateKey(ctx, "alice")
	is.NoErr(err)
	_, err = a.Service().Grant(ctx, "alice", 5, "signup")
	is.NoErr(err)
	sub, err := a.Service().Submit(ctx, "alice", imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "a kite"})
	is.NoErr(err)
	ran, err := a.Service().RunOnce(ctx)
	is.NoErr(err)
	is.True(ran)

	w := do(t, a, "GET", "/api/v1/tasks/"+sub.TaskID, key, "")
	is.Equal(w.Code, http.StatusOK)
	var body wire.TaskBody
	is.NoErr(json.Unmarshal(w.Body.Bytes(), &body))
	is.Equal(len(body.Images), 1)
	path := strings.TrimPrefix(body.Images[0], "https://img.example.com")
	is.True(path != body.Images[0]) // the URL starts with PublicURL

	is.Equal(do(t, b, "GET", path, "", "").Code, http.StatusOK)           // the other server serves it
	is.Equal(do(t, b, "GET", path+"x", "", "").Code, http.StatusNotFound) // a tampered signature does not
	task, err := b.Service().Task(ctx, "alice", sub.TaskID)               // the app's own pages
	is.NoErr(err)                                                         // get the same URLs
	is.Equal(b.API().ImageURLs(task), body.Images)                        // from ImageURLs
}

// The host app's login is tried first; API keys still work; a Principal
// without an owner is refused rather than pooled into one account.
func TestLoginThenKeys(t *testing.T) {
	is := is.New(t)
	c := config(testenv.Memory(t, memory.Config{}))
	c.Login = httpapi.AuthenticatorFunc(func(r *http.Request) (httpapi.Principal, error) {
		switch r.Header.Get("X-Session") {
		case "":
			return httpapi.Principal{}, imagegen.ErrUnauthorized
		case "broken":
			return httpapi.Principal{}, nil // a buggy login: no owner
		default:
			return httpapi.Principal{Owner: r.Header.Get("X-Session")}, nil // no RateKey: per-owner limit
		}
	})
	srv, err := server.New(ctx, c)
	is.NoErr(err)
	key, _, err := srv.Service().CreateKey(ctx, "bob")
	is.NoErr(err)

	is.Equal(do(t, srv, "GET", "/api/v1/credits", key, "").Code, http.StatusOK) // API key

	session := func(who string) int {
		r := httptest.NewRequest("GET", "/api/v1/credits", nil)
		r.Header.Set("X-Session", who)
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, r)
		return w.Code
	}
	is.Equal(session("broken"), http.StatusUnauthorized)
	for range 10 {
		is.Equal(session("carol"), http.StatusOK)
	}
	is.Equal(session("carol"), http.StatusTooManyRequests) // carol's own limit...
	is.Equal(session("dave"), http.StatusOK)               // ...not shared with dave
}

func TestFirstOfKeepsServerErrors(t *testing.T) {
	is := is.New(t)
	boom := errors.New("session store down")
	a := httpapi.FirstOf(
		httpapi.AuthenticatorFunc(func(*http.Request) (httpapi.Principal, error) { return httpapi.Principal{}, boom }),
		httpapi.AuthenticatorFunc(func(*http.Request) (httpapi.Principal, error) { return httpapi.Principal{Owner: "x"}, nil }),
	)
	_, err := a.Authenticate(httptest.NewRequest("GET", "/", nil))
	is.True(errors.Is(err, boom)) // a server error is not papered over by the next authenticator
}

// GET {OpenAIPrefix}/models lists the model that the service's model
// plans for a text-to-image request unless OpenAIModels says otherwise.
func TestOpenAIModelsDefaultToTheServiceModel(t *testing.T) {
	for _, tt := range []struct {
		models []string
		want   []string
	}{{nil, []string{"scripted"}}, {[]string{"a", "b"}, []string{"a", "b"}}} {
		is := is.New(t)
		c := config(testenv.Memory(t, memory.Config{}))
		c.OpenAIPrefix, c.OpenAIModels = "/v1", tt.models
		srv, err := server.New(ctx, c)
		is.NoErr(err)
		key, _, err := srv.Service().CreateKey(ctx, "bob")
		is.NoErr(err)
		mux := http.NewServeMux()
		srv.Register(mux)
		r := httptest.NewRequest("GET", "/v1/models", nil)
		r.Header.Set("Authorization", "Bearer "+key)
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, r)
		is.Equal(w.Code, http.StatusOK)
		var list httpapi.OpenAIModelList
		is.NoErr(json.Unmarshal(w.Body.Bytes(), &list))
		var ids []string
		for _, m := range list.Data {
			ids = append(ids, m.ID)
		}
		is.Equal(ids, tt.want)
	}
}
