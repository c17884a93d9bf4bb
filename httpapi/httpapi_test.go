package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image/png"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/httpapi"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/internal/testenv/apitest"
	"github.com/imagegen/imagegen/ratelimit"
	"github.com/imagegen/imagegen/store/memory"
	"github.com/imagegen/imagegen/wire"
)

const retention = 24 * time.Hour

// env is the real handler on the memory store, a scripted model, a
// manual clock and the memory limiters.
type env struct {
	t     *testing.T
	h     http.Handler
	api   *httpapi.Handler
	svc   *imagegen.Service
	clock *imagegentest.Clock
	model *imagegentest.Model
	key   string // a key of user "alice", who has 10 credits
	stack *apitest.Stack
}

type envOptions struct {
	store    imagegen.Store
	limit    int
	openAI   bool                   // serve the OpenAI-compatible endpoint at /v1
	logger   *slog.Logger           // the API's; default quiet
	observer imagegen.Observer      // default none
	api      func(*httpapi.Config)  // changes the handler's config
	service  func(*imagegen.Config) // changes the service's config
	// mounted serves the Handler as one http.Handler under its prefix
	// (its own routes) instead of Register's routes on the mux.
	mounted bool
}

// quiet keeps the service's logs out of test output.
var quiet = apitest.Quiet

func newEnv(t *testing.T, opts ...func(*envOptions)) *env {
	t.Helper()
	clock := imagegentest.NewClock(time.Time{})
	o := envOptions{store: testenv.Memory(t, memory.Config{Clock: clock, Retention: retention}), limit: 1000, logger: quiet, api: func(*httpapi.Config) {}}
	for _, f := range opts {
		f(&o)
	}
	authFailures, err := ratelimit.NewMemory(ratelimit.MemoryConfig{Limit: 10, Window: time.Minute, Clock: clock})
	is.New(t).NoErr(err)
	s := apitest.New(t, apitest.Config{Clock: clock, Store: o.store, Limit: o.limit, Service: o.service, API: func(cfg *httpapi.Config) {
		cfg.AuthFailures, cfg.PublicURL = authFailures, "https://img.example.test"
		cfg.Logger, cfg.Observer = o.logger, o.observer
		cfg.OpenAIPrefix = map[bool]string{true: "/v1"}[o.openAI]
		o.api(cfg)
	}})
	e := &env{t: t, h: s.Mux, api: s.API, svc: s.Service, clock: clock, model: s.Model, stack: s}
	if o.mounted {
		mux := http.NewServeMux()
		mux.Handle("/api/v1/", s.API)
		e.h = mux
	}
	e.key = e.user("alice", 10)
	return e
}

// user creates a user with credits and returns a new API key of theirs.
func (e *env) user(owner string, credits int64) string { return e.stack.User(owner, credits) }

func (e *env) do(method, path, key, body string, hdr ...string) *httptest.ResponseRecorder {
	return doOn(e.h, method, path, key, body, hdr...)
}

// doOn sends one request to h with key as Bearer token, body as JSON
// and hdr as name, value pairs.
func doOn(h http.Handler, method, path, key, body string, hdr ...string) *httptest.ResponseRecorder {
	if body != "" {
		hdr = append([]string{"Content-Type", "application/json"}, hdr...)
	}
	return doReading(h, method, path, key, strings.NewReader(body), hdr...)
}

// doReading is doOn with the body read from body, and no Content-Type
// but hdr's.
func doReading(h http.Handler, method, path, key string, body io.Reader, hdr ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, body)
	if key != "" {
		r.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func (e *env) submit(key, body string) *httptest.ResponseRecorder {
	return e.do("POST", "/api/v1/generate", key, body)
}

func (e *env) poll(key, id string) *httptest.ResponseRecorder {
	return e.do("GET", "/api/v1/tasks/"+id, key, "")
}

// credits is alice's balance as GET /api/v1/credits answers it.
func (e *env) credits() int64 {
	e.t.Helper()
	is := is.New(e.t)
	w := e.do("GET", "/api/v1/credits", e.key, "")
	is.Equal(w.Code, http.StatusOK)
	var credits wire.Credits
	is.NoErr(json.Unmarshal(w.Body.Bytes(), &credits))
	return credits.CreditsRemaining
}

// fields decodes a JSON object response and returns its keys, sorted.
func fields(t *testing.T, w *httptest.ResponseRecorder) (map[string]any, []string) {
	t.Helper()
	is := is.New(t)
	is.Equal(w.Header().Get("Content-Type"), "application/json")
	var m map[string]any
	is.NoErr(json.Unmarshal(w.Body.Bytes(), &m))
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return m, keys
}

// wantError checks the status and the exact error body shape and code.
func wantError(t *testing.T, w *httptest.ResponseRecorder, status int, code wire.APIErrorCode) string {
	t.Helper()
	is := is.New(t)
	is.Equal(w.Code, status)
	is.Equal(w.Header().Get("Content-Type"), "application/json")
	var body struct {
		Error map[string]string `json:"error"`
	}
	dec := json.NewDecoder(bytes.NewReader(w.Body.Bytes()))
	dec.DisallowUnknownFields()
	is.NoErr(dec.Decode(&body))
	is.Equal(len(body.Error), 2) // exactly code and message
	is.Equal(body.Error["code"], string(code))
	is.True(body.Error["message"] != "")
	return body.Error["message"]
}

const t2i = `{"scene":"text-to-image","prompt":"a red fox","aspect_ratio":"16:9"}`

func TestSubmitResponse(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	w := e.submit(e.key, t2i)
	is.Equal(w.Code, http.StatusCreated)
	m, keys := fields(t, w)
	is.Equal(keys, []string{"credits_remaining", "credits_used", "status", "task_id"})
	is.Equal(m["status"], "pending")
	is.Equal(m["credits_used"], 2.0)      // the scripted model's price
	is.Equal(m["credits_remaining"], 8.0) // 10 - 2
	id := m["task_id"].(string)
	is.True(len(id) >= 18) // at least 72 random bits
	is.True(w.Header().Get("RateLimit") != "")
	is.True(w.Header().Get("RateLimit-Policy") != "")
}

func TestTaskLifecycleBodies(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	ctx := context.Background()
	started, release := make(chan struct{}), make(chan struct{})
	e.model.Then(imagegentest.Block(started, release))

	m, _ := fields(t, e.submit(e.key, t2i))
	id := m["task_id"].(string)

	// pending: only task_id and status.
	w := e.poll(e.key, id)
	is.Equal(w.Code, http.StatusOK)
	m, keys := fields(t, w)
	is.Equal(keys, []string{"status", "task_id"})
	is.Equal(m["status"], "pending")
	is.Equal(m["task_id"], id)

	// processing: only task_id and status.
	done := make(chan struct{})
	go func() { defer close(done); _, _ = e.svc.RunOnce(ctx) }()
	<-started
	m, keys = fields(t, e.poll(e.key, id))
	is.Equal(keys, []string{"status", "task_id"})
	is.Equal(m["status"], "processing")
	close(release)
	<-done

	// success: images, absolute and downloadable without a key.
	m, keys = fields(t, e.poll(e.key, id))
	is.Equal(keys, []string{"images", "status", "task_id"})
	is.Equal(m["status"], "success")
	images := m["images"].([]any)
	is.Equal(len(images), 1)
	url := images[0].(string)
	is.True(strings.HasPrefix(url, "https://img.example.test/api/v1/images/"))
	path := strings.TrimPrefix(url, "https://img.example.test")
	img := e.do("GET", path, "", "")
	is.Equal(img.Code, http.StatusOK)
	is.Equal(img.Header().Get("Content-Type"), "image/png")
	_, err := png.Decode(img.Body)
	is.NoErr(err)

	// A tampered signature or another image id is refused.
	wantError(t, e.do("GET", path[:len(path)-2]+"xx", "", ""), http.StatusNotFound, wire.APINotFound)
	wantError(t, e.do("GET", strings.Replace(path, "expires=", "expires=9", 1), "", ""), http.StatusNotFound, wire.APINotFound)

	// After the retention period the task and its image are gone.
	e.clock.Advance(retention + time.Second)
	wantError(t, e.do("GET", path, "", ""), http.StatusNotFound, wire.APINotFound)
	wantError(t, e.poll(e.key, id), http.StatusNotFound, wire.APITaskNotFound)
}

func TestFailedTaskBodyAndRefund(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	ctx := context.Background()
	e.model.Then(imagegentest.Fail(&imagegen.ModelError{Provider: "scripted", Refused: true, Message: "the prompt was blocked"}))
	m, _ := fields(t, e.submit(e.key, t2i))
	id := m["task_id"].(string)
	ran, err := e.svc.RunOnce(ctx)
	is.NoErr(err)
	is.True(ran)
	m, keys := fields(t, e.poll(e.key, id))
	is.Equal(keys, []string{"error", "error_code", "status", "task_id"}) // error_code: the optional extension
	is.Equal(m["status"], "failed")
	is.True(strings.Contains(m["error"].(string), "the prompt was blocked"))
	is.Equal(m["error_code"], "content_policy")
	bal, err := e.svc.Balance(ctx, "alice")
	is.NoErr(err)
	is.Equal(bal, int64(10))          // refunded
	is.Equal(len(e.model.Calls()), 1) // a refusal is not retried
}

// A key revoked while its requests are being served is refused at once:
// nothing the API keeps between requests lets it through.
func TestRevokedKeyIsRefusedAtOnce(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	poll := func() int { return e.do("GET", "/api/v1/tasks/x", e.key, "").Code }
	for range 3 {
		is.Equal(poll(), http.StatusNotFound) // known key, unknown task
	}
	keys, err := e.svc.Keys(context.Background(), "alice")
	is.NoErr(err)
	is.NoErr(e.svc.RevokeKey(context.Background(), "alice", keys[0].ID))
	is.Equal(poll(), http.StatusUnauthorized)
}

func TestUnauthorized(t *testing.T) {
	e := newEnv(t)
	revoked := e.user("bob", 5)
	keys, err := e.svc.Keys(context.Background(), "bob")
	is.New(t).NoErr(err)
	is.New(t).NoErr(e.svc.RevokeKey(context.Background(), "bob", keys[0].ID))
	broken := []byte(e.key)
	broken[len(broken)-1] ^= 1

	var messages []string
	for name, hdr := range map[string]string{
		"missing":      "",
		"empty bearer": "Bearer ",
		"basic scheme": "Basic " + e.key,
		"unknown key":  "Bearer " + imagegen.NewAPIKey(),
		"bad checksum": "Bearer " + string(broken),
		"short":        "Bearer abc",
		"revoked":      "Bearer " + revoked,
	} {
		t.Run(name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/api/v1/tasks/x", nil)
			if hdr != "" {
				r.Header.Set("Authorization", hdr)
			}
			r.RemoteAddr = "198.51.100." + strconv.Itoa(len(messages)+10) + ":1234" // one IP per case
			w := httptest.NewRecorder()
			e.h.ServeHTTP(w, r)
			messages = append(messages, wantError(t, w, http.StatusUnauthorized, wire.APIUnauthorized))
			for _, m := range messages {
				is.New(t).Equal(m, messages[0]) // every bad key gets the same body
			}
		})
	}
	// Submitting without a key charges nothing.
	wantError(t, e.submit("", t2i), http.StatusUnauthorized, wire.APIUnauthorized)
}

func TestAuthFailuresLimitedPerIP(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	req := func(key string) *httptest.ResponseRecorder {
		return e.do("GET", "/api/v1/tasks/x", key, "")
	}
	var limited *httptest.ResponseRecorder
	for i := 0; i < 100; i++ {
		w := req(imagegen.NewAPIKey())
		if w.Code == http.StatusTooManyRequests {
			limited = w
			break
		}
		wantError(t, w, http.StatusUnauthorized, wire.APIUnauthorized)
	}
	is.True(limited != nil) // brute force from one IP is stopped
	wantError(t, limited, http.StatusTooManyRequests, wire.APIRateLimitExceeded)
	is.True(limited.Header().Get("Retry-After") != "")
	// While failures are refused, a valid key from that IP is still served.
	wantError(t, req(e.key), http.StatusNotFound, wire.APITaskNotFound)
	// Another IP is unaffected.
	r := httptest.NewRequest("GET", "/api/v1/tasks/x", nil)
	r.Header.Set("Authorization", "Bearer "+e.key)
	r.RemoteAddr = "203.0.113.9:4321"
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, r)
	wantError(t, w, http.StatusNotFound, wire.APITaskNotFound)
	// The block ends with time.
	e.clock.Advance(time.Hour)
	wantError(t, req(imagegen.NewAPIKey()), http.StatusUnauthorized, wire.APIUnauthorized)
}

func TestInsufficientCredits(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	poor := e.user("carol", 3)
	is.Equal(e.submit(poor, t2i).Code, http.StatusCreated) // 3 - 2 = 1 left
	msg := wantError(t, e.submit(poor, t2i), http.StatusForbidden, wire.APIInsufficientCredits)
	is.True(msg != "")
	bal, err := e.svc.Balance(context.Background(), "carol")
	is.NoErr(err)
	is.Equal(bal, int64(1)) // nothing charged for the refused submit
	ledger, err := e.svc.Ledger(context.Background(), "carol")
	is.NoErr(err)
	is.Equal(len(ledger), 2) // the grant and one charge
}

func TestTaskNotFound(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	m, _ := fields(t, e.submit(e.key, t2i))
	id := m["task_id"].(string)
	other := e.user("mallory", 10)
	missing := e.poll(e.key, "00000000-0000-4000-8000-000000000000")
	foreign := e.poll(other, id)
	wantError(t, missing, http.StatusNotFound, wire.APITaskNotFound)
	wantError(t, foreign, http.StatusNotFound, wire.APITaskNotFound)
	is.Equal(missing.Body.String(), foreign.Body.String()) // another user's task looks missing
	wantError(t, e.poll(e.key, strings.Repeat("x", 500)), http.StatusNotFound, wire.APITaskNotFound)
}

func TestInvalidParams(t *testing.T) {
	e := newEnv(t)
	for name, body := range map[string]string{
		"malformed":     `{"scene":`,
		"unknown field": `{"scene":"text-to-image","prompt":"p","model":"x"}`,
		"duplicate":     `{"scene":"text-to-image","prompt":"p","prompt":"p"}`,
		"case variant":  `{"scene":"text-to-image","Prompt":"p"}`,
		"long prompt":   `{"scene":"text-to-image","prompt":"` + strings.Repeat("a", 2001) + `"}`,
		"bad ratio":     `{"scene":"text-to-image","prompt":"p","aspect_ratio":"7:5"}`,
		"i2i no images": `{"scene":"image-to-image","prompt":"p"}`,
		"empty":         ``,
	} {
		t.Run(name, func(t *testing.T) {
			wantError(t, e.submit(e.key, body), http.StatusUnprocessableEntity, wire.APIInvalidParams)
		})
	}
	// An unknown field names the one meant, or lists the fields.
	for body, want := range map[string]string{
		`{"scene":"text-to-image","prompt":"p","aspectRatio":"16:9"}`: `aspectRatio: unknown field (did you mean "aspect_ratio"?)`,
		`{"scene":"text-to-image","promt":"p"}`:                       `promt: unknown field (did you mean "prompt"?)`,
		`{"scene":"text-to-image","prompt":"p","model":"x"}`:          "model: unknown field (the fields are scene, prompt, aspect_ratio, image_input, callback_url, seed, callback_events)",
	} {
		t.Run(want, func(t *testing.T) {
			msg := wantError(t, e.submit(e.key, body), http.StatusUnprocessableEntity, wire.APIInvalidParams)
			is.New(t).Equal(msg, want)
		})
	}
	t.Run("content type", func(t *testing.T) {
		w := e.do("POST", "/api/v1/generate", e.key, t2i, "Content-Type", "text/plain")
		msg := wantError(t, w, http.StatusUnprocessableEntity, wire.APIInvalidParams)
		is.New(t).True(strings.Contains(msg, "Content-Type"))
	})
	bal, err := e.svc.Balance(context.Background(), "alice")
	is.New(t).NoErr(err)
	is.New(t).Equal(bal, int64(10)) // nothing charged
}

func TestRateLimit(t *testing.T) {
	is := is.New(t)
	e := newEnv(t, func(o *envOptions) { o.limit = 10 })
	for i := 0; i < 10; i++ {
		w := e.poll(e.key, "nope")
		wantError(t, w, http.StatusNotFound, wire.APITaskNotFound)
		is.Equal(w.Header().Get("RateLimit-Policy"), `"default";q=10;w=60`)
		is.Equal(w.Header().Get("RateLimit"), `"default";r=`+strconv.Itoa(9-i)+";t="+map[bool]string{true: "51", false: "0"}[i == 9]) // the first request leaves the window at 60 s
		e.clock.Advance(time.Second)
	}
	w := e.submit(e.key, t2i)
	wantError(t, w, http.StatusTooManyRequests, wire.APIRateLimitExceeded)
	is.Equal(w.Header().Get("Retry-After"), "50") // the first request leaves the window at t=60s
	bal, err := e.svc.Balance(context.Background(), "alice")
	is.NoErr(err)
	is.Equal(bal, int64(10)) // a limited submit charges nothing
	// Another key has its own budget.
	wantError(t, e.poll(e.user("dave", 1), "nope"), http.StatusNotFound, wire.APITaskNotFound)
	e.clock.Advance(50 * time.Second)
	is.Equal(e.submit(e.key, t2i).Code, http.StatusCreated)
}

// failingStore fails every operation that a request needs after auth.
type failingStore struct{ imagegen.Store }

var errBroken = errors.New("disk on fire")

func (failingStore) CreateTask(context.Context, *imagegen.Task, imagegen.CreateParams) (int64, error) {
	return 0, errBroken
}
func (failingStore) Task(context.Context, string, string) (*imagegen.Task, error) {
	return nil, errBroken
}

func TestInternalError(t *testing.T) {
	is := is.New(t)
	clock := imagegentest.NewClock(time.Time{})
	e := newEnv(t, func(o *envOptions) {
		o.store = failingStore{testenv.Memory(t, memory.Config{Clock: clock, Retention: retention})}
	})
	msg := wantError(t, e.submit(e.key, t2i), http.StatusInternalServerError, wire.APIInternalError)
	is.True(!strings.Contains(msg, "disk on fire")) // internals stay in the log
	wantError(t, e.poll(e.key, "x"), http.StatusInternalServerError, wire.APIInternalError)
}

func TestRoutingErrors(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	wantError(t, e.do("GET", "/api/v1/generate", e.key, ""), http.StatusMethodNotAllowed, wire.APIMethodNotAllowed)
	w := e.do("DELETE", "/api/v1/tasks/abc", e.key, "")
	wantError(t, w, http.StatusMethodNotAllowed, wire.APIMethodNotAllowed)
	is.Equal(w.Header().Get("Allow"), "GET, HEAD")
	for path, allow := range map[string]string{ // every route: another method is a 405 naming the allowed ones
		"/api/v1/generate": "POST", "/api/v1/tasks/abc": "GET, HEAD", "/api/v1/tasks/abc/cancel": "POST",
		"/api/v1/tasks": "GET, HEAD", "/api/v1/credits": "GET, HEAD", "/api/v1/credits/ledger": "GET, HEAD",
		"/api/v1/webhook-secret": "GET, HEAD", "/api/v1/webhook-secret/rotate": "POST", "/api/v1/images/abc": "GET, HEAD", "/api/v1/openapi.json": "GET, HEAD",
	} {
		w := e.do("PUT", path, e.key, "")
		wantError(t, w, http.StatusMethodNotAllowed, wire.APIMethodNotAllowed)
		is.Equal(w.Header().Get("Allow"), allow)
	}
	wantError(t, e.do("GET", "/api/v1/nope", e.key, ""), http.StatusNotFound, wire.APINotFound)
	wantError(t, e.do("GET", "/api/v1/", "", ""), http.StatusNotFound, wire.APINotFound)
	big := `{"scene":"text-to-image","prompt":"` + strings.Repeat("a", httpapi.MaxBodyBytes) + `"}`
	wantError(t, e.submit(e.key, big), http.StatusRequestEntityTooLarge, wire.APIRequestTooLarge)
}
