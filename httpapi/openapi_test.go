package httpapi_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/httpapi"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/store/memory"
	"github.com/imagegen/imagegen/wire"
)

// exchange is one request to the real handler and the answer it got.
type exchange struct {
	name   string
	method string
	target string
	header http.Header
	body   []byte
	// specValid says whether the request follows the description. A few
	// requests the handler refuses are valid as far as a description can
	// tell (an unknown key, duplicate JSON keys).
	specValid bool
	// component names the components.responses entry for answers on no
	// route of the description (an unknown path, a method not allowed).
	component string
	// want, when set, is the status the handler must answer.
	want int

	status     int
	respHeader http.Header
	respBody   []byte
}

func (x *exchange) request() *http.Request {
	r := httptest.NewRequest(x.method, x.target, bytes.NewReader(x.body))
	r.Header = x.header.Clone()
	return r
}

func (x *exchange) errorCode() string {
	var body wire.ErrorBody
	_ = json.Unmarshal(x.respBody, &body)
	return string(body.Error.Code)
}

// recorder sends requests to real handlers and keeps the exchanges.
type recorder struct {
	t   *testing.T
	ips int
	all []*exchange
}

type reqOpt func(*exchange)

func invalid(x *exchange)          { x.specValid = false }
func component(name string) reqOpt { return func(x *exchange) { x.component = name } }
func header(k, v string) reqOpt    { return func(x *exchange) { x.header.Set(k, v) } }
func from(ip string) reqOpt        { return func(x *exchange) { x.header.Set("X-Test-IP", ip) } }
func status(code int) reqOpt       { return func(x *exchange) { x.want = code } }

// do sends one request to e's handler, from an address of its own unless
// from says otherwise.
func (rc *recorder) do(e *env, name, method, target, key, body string, opts ...reqOpt) *exchange {
	rc.t.Helper()
	x := &exchange{name: name, method: method, target: target, header: http.Header{}, body: []byte(body), specValid: true}
	if key != "" {
		x.header.Set("Authorization", "Bearer "+key)
	}
	if body != "" {
		x.header.Set("Content-Type", "application/json")
	}
	for _, o := range opts {
		o(x)
	}
	r := x.request()
	rc.ips++
	r.RemoteAddr = "198.51.100." + strconv.Itoa(rc.ips%250+1) + ":1234"
	if ip := r.Header.Get("X-Test-IP"); ip != "" {
		r.RemoteAddr = ip + ":1234"
	}
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, r)
	x.status, x.respHeader, x.respBody = w.Code, w.Result().Header, w.Body.Bytes()
	if x.want != 0 && x.status != x.want {
		rc.t.Errorf("%s: %s %s -> %d, want %d\n%s", name, method, target, x.status, x.want, x.respBody)
	}
	rc.all = append(rc.all, x)
	return x
}

func (rc *recorder) find(name string) *exchange {
	for _, x := range rc.all {
		if x.name == name {
			return x
		}
	}
	rc.t.Fatalf("no exchange %q", name)
	return nil
}

// recordExchanges drives the real handler through every endpoint, every
// outcome and every error code.
func recordExchanges(t *testing.T) *recorder {
	t.Helper()
	is := is.New(t)
	ctx := context.Background()
	rc := &recorder{t: t}
	e := newEnv(t)
	rich := e.user("rich", 1000)

	// The description itself.
	rc.do(e, "openapi", "GET", "/api/v1/openapi.json", "", "")
	rc.do(e, "openapi with a key", "GET", "/api/v1/openapi.json", rich, "")
	rc.do(e, "openapi wrong method", "POST", "/api/v1/openapi.json", "", "", component("MethodNotAllowed"))

	// Submits that succeed.
	rc.do(e, "submit text-to-image", "POST", "/api/v1/generate", rich, t2i)
	rc.do(e, "submit default ratio", "POST", "/api/v1/generate", rich, `{"scene":"text-to-image","prompt":"p"}`)
	for _, ratio := range []string{"auto", "1:1", "3:2", "2:3", "9:16", "16:9", "3:4", "4:3"} {
		rc.do(e, "submit ratio "+ratio, "POST", "/api/v1/generate", rich, `{"scene":"text-to-image","prompt":"p","aspect_ratio":"`+ratio+`"}`)
	}
	rc.do(e, "submit 2000 code points", "POST", "/api/v1/generate", rich, `{"scene":"text-to-image","prompt":"`+strings.Repeat("é", 2000)+`"}`)
	rc.do(e, "submit image-to-image", "POST", "/api/v1/generate", rich,
		`{"scene":"image-to-image","prompt":"p","image_input":["https://example.com/a.png","HTTP://example.com/b?x=1"]}`)
	eight := strings.TrimSuffix(strings.Repeat(`"https://example.com/x.png",`, 8), ",")
	rc.do(e, "submit 8 images", "POST", "/api/v1/generate", rich, `{"scene":"image-to-image","prompt":"p","image_input":[`+eight+`]}`)

	// Submits refused with 422: the description refuses them too, except
	// where noted.
	for name, body := range map[string]string{
		"malformed":          `{"scene":`,
		"not an object":      `[]`,
		"unknown field":      `{"scene":"text-to-image","prompt":"p","model":"x"}`,
		"case variant":       `{"scene":"text-to-image","Prompt":"p"}`,
		"wrong type":         `{"scene":"text-to-image","prompt":7}`,
		"no scene":           `{"prompt":"p"}`,
		"bad scene":          `{"scene":"video","prompt":"p"}`,
		"empty prompt":       `{"scene":"text-to-image","prompt":""}`,
		"long prompt":        `{"scene":"text-to-image","prompt":"` + strings.Repeat("é", 2001) + `"}`,
		"bad ratio":          `{"scene":"text-to-image","prompt":"p","aspect_ratio":"7:5"}`,
		"i2i no images":      `{"scene":"image-to-image","prompt":"p"}`,
		"i2i empty images":   `{"scene":"image-to-image","prompt":"p","image_input":[]}`,
		"i2i 9 images":       `{"scene":"image-to-image","prompt":"p","image_input":[` + eight + `,"https://example.com/9.png"]}`,
		"i2i ftp":            `{"scene":"image-to-image","prompt":"p","image_input":["ftp://example.com/a.png"]}`,
		"i2i relative":       `{"scene":"image-to-image","prompt":"p","image_input":["/a.png"]}`,
		"i2i credentials":    `{"scene":"image-to-image","prompt":"p","image_input":["https://u:pw@example.com/a.png"]}`,
		"t2i with images":    `{"scene":"text-to-image","prompt":"p","image_input":["https://example.com/a.png"]}`,
		"t2i with no images": `{"scene":"text-to-image","prompt":"p","image_input":[]}`,
		"empty":              ``,
	} {
		opts := []reqOpt{invalid}
		if body == "" {
			opts = append(opts, header("Content-Type", "application/json"))
		}
		rc.do(e, "invalid: "+name, "POST", "/api/v1/generate", rich, body, opts...)
	}
	rc.do(e, "invalid: duplicate key", "POST", "/api/v1/generate", rich, `{"scene":"text-to-image","prompt":"p","prompt":"p"}`) // JSON Schema sees one key
	rc.do(e, "invalid: content type", "POST", "/api/v1/generate", rich, t2i, header("Content-Type", "text/plain"), invalid)
	big := `{"scene":"text-to-image","prompt":"` + strings.Repeat("a", httpapi.MaxBodyBytes) + `"}`
	rc.do(e, "too large", "POST", "/api/v1/generate", rich, big, invalid)

	// Authentication.
	rc.do(e, "submit without key", "POST", "/api/v1/generate", "", t2i, invalid)
	rc.do(e, "submit unknown key", "POST", "/api/v1/generate", imagegen.NewAPIKey(), t2i)
	rc.do(e, "poll basic auth", "GET", "/api/v1/tasks/x", "", "", header("Authorization", "Basic "+rich), invalid)
	rc.do(e, "poll unknown key", "GET", "/api/v1/tasks/x", imagegen.NewAPIKey(), "")

	// wire.Credits.
	poor := e.user("poor", 3)
	rc.do(e, "submit with 3 credits", "POST", "/api/v1/generate", poor, t2i)
	rc.do(e, "insufficient credits", "POST", "/api/v1/generate", poor, t2i)

	// A task through its states (the worker runs only the scripted model:
	// nothing is fetched). Earlier tasks run first.
	e.runAll()
	started, release := make(chan struct{}), make(chan struct{})
	e.model.Then(imagegentest.Block(started, release))
	id := taskID(t, rc.do(e, "submit to watch", "POST", "/api/v1/generate", e.key, t2i))
	rc.do(e, "poll pending", "GET", "/api/v1/tasks/"+id, e.key, "")
	rc.do(e, "poll pending, full view", "GET", "/api/v1/tasks/"+id+"?view=full", e.key, "", status(http.StatusOK))
	done := make(chan struct{})
	go func() { defer close(done); _, _ = e.svc.RunOnce(ctx) }()
	<-started
	rc.do(e, "poll processing", "GET", "/api/v1/tasks/"+id, e.key, "")
	rc.do(e, "poll processing, full view", "GET", "/api/v1/tasks/"+id+"?view=full", e.key, "", status(http.StatusOK))
	close(release)
	<-done
	ok := rc.do(e, "poll success", "GET", "/api/v1/tasks/"+id, e.key, "")
	rc.do(e, "poll success, basic view", "GET", "/api/v1/tasks/"+id+"?view=basic", e.key, "", status(http.StatusOK))
	rc.do(e, "poll success, full view", "GET", "/api/v1/tasks/"+id+"?view=full", e.key, "", status(http.StatusOK))
	rc.do(e, "poll, unknown view", "GET", "/api/v1/tasks/"+id+"?view=all", e.key, "", invalid, status(http.StatusUnprocessableEntity))
	rc.do(e, "long poll of an ended task", "GET", "/api/v1/tasks/"+id, e.key, "", header("Prefer", "wait=25"))
	var task wire.TaskBody
	is.NoErr(json.Unmarshal(ok.respBody, &task))
	is.Equal(len(task.Images), 1)
	image := strings.TrimPrefix(task.Images[0], "https://img.example.test")
	downloaded := rc.do(e, "download image", "GET", image, "", "")
	rc.do(e, "download, not modified", "GET", image, "", "", header("If-None-Match", downloaded.respHeader.Get("ETag")), status(http.StatusNotModified))
	rc.do(e, "download a range", "GET", image, "", "", header("Range", "bytes=0-9"), status(http.StatusPartialContent))
	rc.do(e, "download two ranges", "GET", image, "", "", header("Range", "bytes=0-9,-10"), status(http.StatusPartialContent))
	rc.do(e, "download, range past the end", "GET", image, "", "", header("Range", "bytes=999999-"), status(http.StatusRequestedRangeNotSatisfiable))
	rc.do(e, "download, empty suffix range", "GET", image, "", "", header("Range", "bytes=-0"), status(http.StatusRequestedRangeNotSatisfiable))
	rc.do(e, "download, If-Match fails", "GET", image, "", "", header("If-Match", `"other"`), status(http.StatusPreconditionFailed))
	rc.do(e, "download with a key", "GET", image, e.key, "")
	rc.do(e, "download tampered", "GET", image[:len(image)-2]+"xx", "", "")
	rc.do(e, "download no signature", "GET", strings.Split(image, "?")[0], "", "", invalid)
	rc.do(e, "download wrong method", "DELETE", image, "", "", component("MethodNotAllowed"))

	e.model.Then(imagegentest.Fail(&imagegen.ModelError{Provider: "scripted", Refused: true, Message: "the prompt was blocked"}))
	failed := taskID(t, rc.do(e, "submit to fail", "POST", "/api/v1/generate", e.key, t2i))
	e.runAll()
	rc.do(e, "poll failed", "GET", "/api/v1/tasks/"+failed, e.key, "")
	rc.do(e, "poll failed, full view", "GET", "/api/v1/tasks/"+failed+"?view=full", e.key, "", status(http.StatusOK))
	var failedTask wire.TaskBody
	is.NoErr(json.Unmarshal(rc.find("poll failed").respBody, &failedTask))
	is.Equal(failedTask.ErrorCode, imagegen.CodeContentPolicy)

	recordExtensions(t, rc, e, rich, id)
	recordOpenAI(t, rc)

	rc.do(e, "task not found", "GET", "/api/v1/tasks/00000000-0000-4000-8000-000000000000", e.key, "")
	rc.do(e, "another user's task", "GET", "/api/v1/tasks/"+id, rich, "")
	rc.do(e, "task wrong method", "PATCH", "/api/v1/tasks/"+id, e.key, "", component("MethodNotAllowed"))
	rc.do(e, "generate wrong method", "GET", "/api/v1/generate", e.key, "", component("MethodNotAllowed"))
	rc.do(e, "unknown path", "GET", "/api/v1/nope", e.key, "", component("NotFound"))
	rc.do(e, "API root", "GET", "/api/v1/", "", "", component("NotFound"))

	// Rate limits: per key, and failed authentications per client IP.
	limited := newEnv(t, func(o *envOptions) { o.limit = 2 })
	rc.do(limited, "poll within limit", "GET", "/api/v1/tasks/x", limited.key, "")
	rc.do(limited, "poll at limit", "GET", "/api/v1/tasks/x", limited.key, "")
	rc.do(limited, "submit over limit", "POST", "/api/v1/generate", limited.key, t2i)
	rc.do(limited, "poll over limit", "GET", "/api/v1/tasks/x", limited.key, "")
	rc.do(limited, "cancel over limit", "POST", "/api/v1/tasks/x/cancel", limited.key, "", status(http.StatusTooManyRequests))
	rc.do(limited, "list over limit", "GET", "/api/v1/tasks", limited.key, "", status(http.StatusTooManyRequests))
	rc.do(limited, "credits over limit", "GET", "/api/v1/credits", limited.key, "", status(http.StatusTooManyRequests))
	rc.do(limited, "ledger over limit", "GET", "/api/v1/credits/ledger", limited.key, "", status(http.StatusTooManyRequests))
	rc.do(limited, "webhook secret over limit", "GET", "/api/v1/webhook-secret", limited.key, "", status(http.StatusTooManyRequests))
	rc.do(limited, "webhook secret rotate over limit", "POST", "/api/v1/webhook-secret/rotate", limited.key, "", status(http.StatusTooManyRequests))
	for i := range 100 {
		x := rc.do(limited, "guess "+strconv.Itoa(i), "GET", "/api/v1/tasks/x", imagegen.NewAPIKey(), "", from("203.0.113.7"))
		if x.status == http.StatusTooManyRequests {
			x.name = "guessing keys"
			break
		}
	}
	is.Equal(rc.find("guessing keys").status, http.StatusTooManyRequests)

	// Server errors.
	clock := imagegentest.NewClock(time.Time{})
	broken := newEnv(t, func(o *envOptions) {
		o.store = failingStore{testenv.Memory(t, memory.Config{Clock: clock, Retention: retention})}
	})
	rc.do(broken, "submit, store down", "POST", "/api/v1/generate", broken.key, t2i)
	rc.do(broken, "poll, store down", "GET", "/api/v1/tasks/x", broken.key, "")
	lost := newEnv(t, func(o *envOptions) {
		o.store = imageLostStore{testenv.Memory(t, memory.Config{Clock: clock, Retention: retention})}
	})
	lostID := taskID(t, rc.do(lost, "submit, images to be lost", "POST", "/api/v1/generate", lost.key, t2i))
	lost.runAll()
	var lostTask wire.TaskBody
	is.NoErr(json.Unmarshal(rc.do(lost, "poll, images to be lost", "GET", "/api/v1/tasks/"+lostID, lost.key, "").respBody, &lostTask))
	is.Equal(len(lostTask.Images), 1)
	lostPath := strings.TrimPrefix(lostTask.Images[0], "https://img.example.test")
	rc.do(lost, "download, record store down", "GET", lostPath, "", "", status(http.StatusServiceUnavailable))
	short := newEnv(t, func(o *envOptions) {
		o.store = imageShortStore{testenv.Memory(t, memory.Config{Clock: clock, Retention: retention})}
	})
	shortPath, _ := short.imagePath()
	rc.do(short, "download, bytes shorter than their record", "GET", shortPath, "", "", status(http.StatusInternalServerError))
	outage, outageBlobs := outageEnv(t, nil)
	outagePath, _ := outage.imagePath()
	outageBlobs.mode.Store(storeHangs)
	rc.do(outage, "download, image store not answering", "GET", outagePath, "", "", status(http.StatusGatewayTimeout))
	outageBlobs.mode.Store(storeFails)
	rc.do(outage, "download, image store failing", "GET", outagePath, "", "", status(http.StatusServiceUnavailable))
	cdn := newEnv(t, func(o *envOptions) {
		o.api = func(c *httpapi.Config) { c.ImageBaseURL = "https://cdn.example.test" }
	})
	cdnID := taskID(t, rc.do(cdn, "submit, images on a CDN", "POST", "/api/v1/generate", cdn.key, t2i))
	cdn.runAll()
	var cdnTask wire.TaskBody
	is.NoErr(json.Unmarshal(rc.do(cdn, "poll, images on a CDN", "GET", "/api/v1/tasks/"+cdnID, cdn.key, "").respBody, &cdnTask))
	rc.do(cdn, "download, redirected to the CDN", "GET", strings.TrimPrefix(cdnTask.Images[0], "https://img.example.test"), "", "", status(http.StatusFound))
	down := newEnv(t, func(o *envOptions) {
		o.store = extensionsDownStore{testenv.Memory(t, memory.Config{Clock: clock, Retention: retention})}
	})
	rc.do(down, "cancel, store down", "POST", "/api/v1/tasks/x/cancel", down.key, "", status(http.StatusInternalServerError))
	rc.do(down, "list, store down", "GET", "/api/v1/tasks", down.key, "", status(http.StatusInternalServerError))
	rc.do(down, "credits, store down", "GET", "/api/v1/credits", down.key, "", status(http.StatusInternalServerError))
	rc.do(down, "ledger, store down", "GET", "/api/v1/credits/ledger", down.key, "", status(http.StatusInternalServerError))
	rc.do(down, "webhook secret, store down", "GET", "/api/v1/webhook-secret", down.key, "", status(http.StatusInternalServerError))
	rc.do(down, "webhook secret rotate, store down", "POST", "/api/v1/webhook-secret/rotate", down.key, "", status(http.StatusInternalServerError))
	rc.do(down, "idempotent submit, store down", "POST", "/api/v1/generate", down.key, t2i,
		header("Idempotency-Key", "order-1"), status(http.StatusInternalServerError))
	return rc
}

// recordExtensions drives the optional extensions: cancel, the task list,
// the balance, idempotent submits, callbacks and long polls. succeeded is a task of
// e.key's user that ended in success.
func recordExtensions(t *testing.T, rc *recorder, e *env, rich, succeeded string) {
	t.Helper()
	is := is.New(t)
	ctx := context.Background()
	const unknownTask = "/api/v1/tasks/00000000-0000-4000-8000-000000000000"

	// Cancel.
	pending := taskID(t, rc.do(e, "submit to cancel", "POST", "/api/v1/generate", e.key, t2i))
	cancel := "/api/v1/tasks/" + pending + "/cancel"
	rc.do(e, "cancel another user's task", "POST", cancel, rich, "", status(http.StatusNotFound))
	var task wire.TaskBody
	is.NoErr(json.Unmarshal(rc.do(e, "cancel pending", "POST", cancel, e.key, "", status(http.StatusOK)).respBody, &task))
	is.Equal(task, wire.TaskBody{TaskID: pending, Status: imagegen.StatusFailed, Error: imagegen.CancelledMessage, ErrorCode: imagegen.CodeCancelled})
	rc.do(e, "cancel cancelled", "POST", cancel, e.key, "", status(http.StatusConflict))
	rc.do(e, "cancel succeeded", "POST", "/api/v1/tasks/"+succeeded+"/cancel", e.key, "", status(http.StatusConflict))
	rc.do(e, "cancel unknown task", "POST", unknownTask+"/cancel", e.key, "", status(http.StatusNotFound))
	rc.do(e, "cancel without key", "POST", cancel, "", "", invalid, status(http.StatusUnauthorized))
	rc.do(e, "cancel unknown key", "POST", cancel, imagegen.NewAPIKey(), "", status(http.StatusUnauthorized))
	rc.do(e, "cancel wrong method", "GET", cancel, e.key, "", component("MethodNotAllowed"))

	// The task list: pages, a filter, bad parameters.
	dana := e.user("dana", 10)
	var danas []string
	for i := range 3 {
		danas = append(danas, taskID(t, rc.do(e, "submit to list "+strconv.Itoa(i), "POST", "/api/v1/generate", dana, t2i)))
	}
	var page wire.TaskList
	is.NoErr(json.Unmarshal(rc.do(e, "list first page", "GET", "/api/v1/tasks?limit=2", dana, "", status(http.StatusOK)).respBody, &page))
	is.Equal(len(page.Tasks), 2)
	is.Equal(page.Tasks[0].TaskID, danas[2]) // newest first
	is.Equal(page.Tasks[1].TaskID, danas[1])
	is.True(page.NextCursor != "")
	next := "/api/v1/tasks?limit=2&cursor=" + url.QueryEscape(page.NextCursor)
	page = wire.TaskList{}
	last := rc.do(e, "list last page", "GET", next, dana, "", status(http.StatusOK))
	is.NoErr(json.Unmarshal(last.respBody, &page))
	is.Equal(len(page.Tasks), 1)
	is.Equal(page.Tasks[0].TaskID, danas[0])
	is.True(!bytes.Contains(last.respBody, []byte("next_cursor"))) // omitted on the last page
	page = wire.TaskList{}
	is.NoErr(json.Unmarshal(rc.do(e, "list failed tasks", "GET", "/api/v1/tasks?status=failed", e.key, "", status(http.StatusOK)).respBody, &page))
	is.Equal(len(page.Tasks), 2) // the refused one and the cancelled one
	for _, task := range page.Tasks {
		is.Equal(task.Status, imagegen.StatusFailed)
	}
	is.Equal(page.Tasks[0].ErrorCode, imagegen.CodeCancelled)
	is.Equal(page.Tasks[1].ErrorCode, imagegen.CodeContentPolicy)
	page = wire.TaskList{}
	is.NoErr(json.Unmarshal(rc.do(e, "list every status", "GET", "/api/v1/tasks?limit=100", e.key, "", status(http.StatusOK)).respBody, &page))
	is.Equal(len(page.Tasks), 3) // success, failed, cancelled
	is.Equal(page.Tasks[2].Status, imagegen.StatusSuccess)
	is.Equal(string(rc.do(e, "list without tasks", "GET", "/api/v1/tasks", e.user("erin", 0), "", status(http.StatusOK)).respBody), `{"tasks":[]}`+"\n")
	for name, query := range map[string]string{
		"bad status":       "status=done",
		"limit 0":          "limit=0",
		"limit 101":        "limit=101",
		"limit not number": "limit=ten",
		"long cursor":      "cursor=" + strings.Repeat("7", 257),
	} {
		rc.do(e, "list: "+name, "GET", "/api/v1/tasks?"+query, e.key, "", invalid, status(http.StatusUnprocessableEntity))
	}
	// Unknown and repeated parameters are refused, not ignored; a
	// description does not say that.
	rc.do(e, "list: unknown parameter", "GET", "/api/v1/tasks?limt=5", e.key, "", status(http.StatusUnprocessableEntity))
	rc.do(e, "list: repeated status", "GET", "/api/v1/tasks?status=pending&status=failed", e.key, "", status(http.StatusUnprocessableEntity))
	// A cursor the server never gave looks like any other to a description.
	rc.do(e, "list: unknown cursor", "GET", "/api/v1/tasks?cursor=bogus", e.key, "", status(http.StatusUnprocessableEntity))
	rc.do(e, "list unknown key", "GET", "/api/v1/tasks", imagegen.NewAPIKey(), "", status(http.StatusUnauthorized))
	rc.do(e, "list wrong method", "POST", "/api/v1/tasks", e.key, "", component("MethodNotAllowed"))

	// The balance.
	var credits wire.Credits
	is.NoErr(json.Unmarshal(rc.do(e, "credits", "GET", "/api/v1/credits", dana, "", status(http.StatusOK)).respBody, &credits))
	is.Equal(credits.CreditsRemaining, int64(4)) // 10 - 3 x 2
	rc.do(e, "credits unknown key", "GET", "/api/v1/credits", imagegen.NewAPIKey(), "", status(http.StatusUnauthorized))

	// The ledger: dana's grant and three charges, two at a time.
	var ledger wire.Ledger
	is.NoErr(json.Unmarshal(rc.do(e, "ledger first page", "GET", "/api/v1/credits/ledger?limit=2", dana, "", status(http.StatusOK)).respBody, &ledger))
	is.Equal(len(ledger.Entries), 2)
	is.Equal(ledger.Entries[0].Reference, danas[2]) // newest first: the last charge
	is.Equal(ledger.Entries[0].BalanceAfter, int64(4))
	lastLedger := rc.do(e, "ledger last page", "GET", "/api/v1/credits/ledger?limit=2&cursor="+url.QueryEscape(ledger.NextCursor), dana, "", status(http.StatusOK))
	ledger = wire.Ledger{}
	is.NoErr(json.Unmarshal(lastLedger.respBody, &ledger))
	is.Equal(len(ledger.Entries), 2)
	is.Equal(ledger.Entries[1].Kind, imagegen.LedgerGrant)
	is.Equal(ledger.NextCursor, "")
	rc.do(e, "ledger: limit 0", "GET", "/api/v1/credits/ledger?limit=0", dana, "", invalid, status(http.StatusUnprocessableEntity))
	rc.do(e, "ledger: unknown cursor", "GET", "/api/v1/credits/ledger?cursor=bogus", dana, "", status(http.StatusUnprocessableEntity))
	rc.do(e, "ledger unknown key", "GET", "/api/v1/credits/ledger", imagegen.NewAPIKey(), "", status(http.StatusUnauthorized))
	rc.do(e, "ledger wrong method", "DELETE", "/api/v1/credits/ledger", dana, "", component("MethodNotAllowed"))

	// The full view in the list, and seeds.
	rc.do(e, "list, full view", "GET", "/api/v1/tasks?view=full", dana, "", status(http.StatusOK))
	rc.do(e, "list: unknown view", "GET", "/api/v1/tasks?view=all", dana, "", invalid, status(http.StatusUnprocessableEntity))
	rc.do(e, "submit with seed", "POST", "/api/v1/generate", rich, `{"scene":"text-to-image","prompt":"p","seed":4294967294}`, status(http.StatusCreated))
	for name, seed := range map[string]string{"negative": "-1", "too big": "4294967295", "fraction": "1.5", "string": `"1"`} {
		rc.do(e, "invalid: seed "+name, "POST", "/api/v1/generate", rich, `{"scene":"text-to-image","prompt":"p","seed":`+seed+`}`, invalid, status(http.StatusUnprocessableEntity))
	}
	rc.do(e, "credits wrong method", "POST", "/api/v1/credits", e.key, "", component("MethodNotAllowed"))

	// Idempotent submits.
	key := func(k string) reqOpt { return header("Idempotency-Key", k) }
	first := rc.do(e, "idempotent submit", "POST", "/api/v1/generate", rich, t2i, key("order-1"), status(http.StatusCreated))
	again := rc.do(e, "idempotent submit replayed", "POST", "/api/v1/generate", rich, t2i, key("order-1"), status(http.StatusCreated))
	is.Equal(first.respHeader.Get("Idempotent-Replayed"), "")
	is.Equal(again.respHeader.Get("Idempotent-Replayed"), "true")
	is.Equal(again.respBody, first.respBody) // the same task, charged once
	rc.do(e, "idempotency key with another body", "POST", "/api/v1/generate", rich, `{"scene":"text-to-image","prompt":"another fox"}`,
		key("order-1"), status(http.StatusUnprocessableEntity))
	sum := sha256.Sum256([]byte(t2i))
	rec, err := e.stack.Store.BeginIdempotent(ctx, "rich", "order-2", hex.EncodeToString(sum[:]), "", time.Minute, time.Hour)
	is.NoErr(err)
	is.True(rec == nil) // order-2 is now in flight
	rc.do(e, "idempotency key in use", "POST", "/api/v1/generate", rich, t2i, key("order-2"), status(http.StatusConflict))
	rc.do(e, "idempotency key too long", "POST", "/api/v1/generate", rich, t2i, key(strings.Repeat("k", 256)), invalid, status(http.StatusUnprocessableEntity))
	rc.do(e, "idempotency key empty", "POST", "/api/v1/generate", rich, t2i, key(""), invalid, status(http.StatusUnprocessableEntity))
	rc.do(e, "idempotency key not ASCII", "POST", "/api/v1/generate", rich, t2i, key("café"), invalid, status(http.StatusUnprocessableEntity))
	broke := e.user("broke", 0)
	rc.do(e, "idempotent submit, no credits", "POST", "/api/v1/generate", broke, t2i, key("k"), status(http.StatusForbidden))
	x := rc.do(e, "idempotent submit, no credits, retried", "POST", "/api/v1/generate", broke, t2i, key("k"), status(http.StatusForbidden))
	is.Equal(x.respHeader.Get("Idempotent-Replayed"), "") // depends on the balance: not kept
	bad := `{"scene":"video","prompt":"p"}`
	rc.do(e, "idempotent invalid submit", "POST", "/api/v1/generate", rich, bad, key("order-3"), invalid, status(http.StatusUnprocessableEntity))
	x = rc.do(e, "idempotent invalid submit, retried", "POST", "/api/v1/generate", rich, bad, key("order-3"), invalid, status(http.StatusUnprocessableEntity))
	is.Equal(x.respHeader.Get("Idempotent-Replayed"), "") // a refusal of the body is not kept: refused again
	x = rc.do(e, "idempotent submit, corrected after a refusal", "POST", "/api/v1/generate", rich, t2i, key("order-3"), status(http.StatusCreated))
	is.Equal(x.respHeader.Get("Idempotent-Replayed"), "") // the key is free for the corrected body

	// Callbacks: the submit field and the signing secret.
	rc.do(e, "submit with callback_url", "POST", "/api/v1/generate", rich,
		`{"scene":"text-to-image","prompt":"p","callback_url":"https://hooks.example.com/imagegen?id=1"}`, status(http.StatusCreated))
	for name, callback := range map[string]string{
		"http":        "http://hooks.example.com/imagegen",
		"relative":    "/imagegen",
		"credentials": "https://u:pw@hooks.example.com/imagegen",
		"ftp":         "ftp://hooks.example.com/imagegen",
		"too long":    "https://hooks.example.com/" + strings.Repeat("a", 2048),
	} {
		rc.do(e, "invalid: callback_url "+name, "POST", "/api/v1/generate", rich,
			`{"scene":"text-to-image","prompt":"p","callback_url":"`+callback+`"}`, invalid, status(http.StatusUnprocessableEntity))
	}
	rc.do(e, "submit with callback_events", "POST", "/api/v1/generate", rich,
		`{"scene":"text-to-image","prompt":"p","callback_url":"https://hooks.example.com/imagegen","callback_events":["processing","completed"]}`, status(http.StatusCreated))
	for name, body := range map[string]string{
		"without callback_url": `{"scene":"text-to-image","prompt":"p","callback_events":["completed"]}`,
		"empty":                `{"scene":"text-to-image","prompt":"p","callback_url":"https://hooks.example.com/h","callback_events":[]}`,
		"unknown":              `{"scene":"text-to-image","prompt":"p","callback_url":"https://hooks.example.com/h","callback_events":["started"]}`,
		"twice":                `{"scene":"text-to-image","prompt":"p","callback_url":"https://hooks.example.com/h","callback_events":["completed","completed"]}`,
	} {
		rc.do(e, "invalid: callback_events "+name, "POST", "/api/v1/generate", rich, body, invalid, status(http.StatusUnprocessableEntity))
	}
	rc.do(e, "callback_url loopback", "POST", "/api/v1/generate", rich, // not public: the description's pattern cannot tell
		`{"scene":"text-to-image","prompt":"p","callback_url":"https://127.0.0.1/hook"}`, status(http.StatusUnprocessableEntity))
	secret := rc.do(e, "webhook secret", "GET", "/api/v1/webhook-secret", rich, "", status(http.StatusOK))
	var ws httpapi.WebhookSecret
	is.NoErr(json.Unmarshal(secret.respBody, &ws))
	want, err := e.svc.WebhookSecret(ctx, "rich")
	is.NoErr(err)
	is.Equal(ws.Secret, want)
	is.Equal(secret.respHeader.Get("Cache-Control"), "no-store")
	rc.do(e, "webhook secret without key", "GET", "/api/v1/webhook-secret", "", "", invalid, status(http.StatusUnauthorized))
	rc.do(e, "webhook secret unknown key", "GET", "/api/v1/webhook-secret", imagegen.NewAPIKey(), "", status(http.StatusUnauthorized))
	rc.do(e, "webhook secret wrong method", "POST", "/api/v1/webhook-secret", e.key, "", component("MethodNotAllowed"))
	rotated := rc.do(e, "webhook secret rotate", "POST", "/api/v1/webhook-secret/rotate", rich, "", status(http.StatusOK))
	var rot httpapi.WebhookSecretRotation
	is.NoErr(json.Unmarshal(rotated.respBody, &rot))
	is.True(rot.Secret != ws.Secret)
	is.True(rot.PreviousExpiresAt.Equal(e.clock.Now().Add(imagegen.DefaultWebhookSecretGrace)))
	is.Equal(rotated.respHeader.Get("Cache-Control"), "no-store")
	want, err = e.svc.WebhookSecret(ctx, "rich")
	is.NoErr(err)
	is.Equal(rot.Secret, want) // the new secret is the one GET answers now
	rc.do(e, "webhook secret rotate without key", "POST", "/api/v1/webhook-secret/rotate", "", "", invalid, status(http.StatusUnauthorized))
	rc.do(e, "webhook secret rotate unknown key", "POST", "/api/v1/webhook-secret/rotate", imagegen.NewAPIKey(), "", status(http.StatusUnauthorized))
	rc.do(e, "webhook secret rotate wrong method", "GET", "/api/v1/webhook-secret/rotate", rich, "", component("MethodNotAllowed"))

	// A long poll of a task that stays pending answers when its wait ends.
	waiting := taskID(t, rc.do(e, "submit to wait on", "POST", "/api/v1/generate", e.key, t2i))
	polled := startWaiting(t, e.clock, func() *exchange {
		return rc.do(e, "long poll times out", "GET", "/api/v1/tasks/"+waiting, e.key, "", header("Prefer", "wait=5"), status(http.StatusOK))
	})
	e.clock.Advance(5 * time.Second)
	x = <-polled
	is.Equal(x.respHeader.Get("Preference-Applied"), "wait=5")
	is.Equal(x.respHeader.Get("Vary"), "Prefer")
	var still wire.TaskBody
	is.NoErr(json.Unmarshal(x.respBody, &still))
	is.Equal(still, wire.TaskBody{TaskID: waiting, Status: imagegen.StatusPending})
}

// recordOpenAI drives the OpenAI-compatible endpoint through each of
// its answers.
func recordOpenAI(t *testing.T, rc *recorder) {
	t.Helper()
	const path = "/v1/images/generations"
	e := newEnv(t, func(o *envOptions) { o.openAI = true })
	// generate sends the request while workers run, so that it ends.
	generate := func(name, body string, opts ...reqOpt) *exchange {
		return whileWorking(t, e.svc, func() *exchange { return rc.do(e, name, "POST", path, e.key, body, opts...) })
	}
	generate("openai: url", `{"model":"dall-e-3","prompt":"A cute baby sea otter","n":1,"size":"1792x1024","quality":"hd","style":"natural","response_format":"url"}`, status(http.StatusOK))
	generate("openai: b64_json", `{"prompt":"A cute baby sea otter","size":"1024x1024","response_format":"b64_json"}`, status(http.StatusOK))
	rc.do(e, "openai: bad size", "POST", path, e.key, `{"prompt":"otter","size":"1000x700"}`, status(http.StatusBadRequest))
	rc.do(e, "openai: n 2", "POST", path, e.key, `{"prompt":"otter","n":2}`, invalid, status(http.StatusBadRequest))
	rc.do(e, "openai: unknown field", "POST", path, e.key, `{"prompt":"otter","seed":2}`, invalid, status(http.StatusBadRequest))
	e.model.Then(imagegentest.Fail(&imagegen.ModelError{Provider: "scripted", Refused: true, Message: "the prompt was blocked"}))
	generate("openai: refused", `{"prompt":"otter"}`, status(http.StatusBadRequest))
	e.model.Then(imagegentest.Fail(&imagegen.ModelError{Provider: "scripted", Message: "provider down"}))
	generate("openai: failed", `{"prompt":"otter"}`, status(http.StatusInternalServerError))
	rc.do(e, "openai: no key", "POST", path, "", `{"prompt":"otter"}`, invalid, status(http.StatusUnauthorized))
	rc.do(e, "openai: no credits", "POST", path, e.user("penny", 0), `{"prompt":"otter"}`, status(http.StatusTooManyRequests))

	// Not done in time: cancelled, refunded, 504.
	timedOut := startWaiting(t, e.clock, func() *exchange {
		return rc.do(e, "openai: timeout", "POST", path, e.key, `{"prompt":"otter"}`, status(http.StatusGatewayTimeout))
	})
	e.clock.Advance(imagegen.MaxWait)
	<-timedOut

	rc.do(e, "openai: too large", "POST", path, e.key, `{"prompt":"`+strings.Repeat("a", 1<<20)+`"}`, invalid, status(http.StatusRequestEntityTooLarge))
	rc.do(e, "openai: models", "GET", "/v1/models", e.key, "", status(http.StatusOK))
	rc.do(e, "openai: models, no key", "GET", "/v1/models", "", "", invalid, status(http.StatusUnauthorized))
	rc.do(e, "openai: model", "GET", "/v1/models/"+httpapi.DefaultOpenAIModel, e.key, "", status(http.StatusOK))
	rc.do(e, "openai: unknown model", "GET", "/v1/models/nope", e.key, "", status(http.StatusNotFound))
	rc.do(e, "openai: model, no key", "GET", "/v1/models/nope", "", "", invalid, status(http.StatusUnauthorized))

	// The server begins to shut down while a request waits: 503.
	drained := newEnv(t, func(o *envOptions) { o.openAI = true })
	shutDown := startWaiting(t, drained.clock, func() *exchange { // no worker runs: it waits
		return rc.do(drained, "openai: shutting down", "POST", path, drained.key, `{"prompt":"otter"}`, status(http.StatusServiceUnavailable))
	})
	drained.api.Drain()
	<-shutDown

	limited := newEnv(t, func(o *envOptions) { o.limit = 1; o.openAI = true })
	rc.do(limited, "openai: within limit", "POST", path, limited.key, `{"prompt":"otter","n":5}`, invalid, status(http.StatusBadRequest))
	rc.do(limited, "openai: over limit", "POST", path, limited.key, `{"prompt":"otter"}`, status(http.StatusTooManyRequests))
}

// extensionsDownStore fails the store operations of the extensions.
type extensionsDownStore struct{ *memory.Store }

func (extensionsDownStore) CancelTask(context.Context, string, string, imagegen.CancelParams) (int64, error) {
	return 0, errBroken
}
func (extensionsDownStore) Balance(context.Context, string) (int64, error) { return 0, errBroken }
func (extensionsDownStore) ListLedger(context.Context, string, int, string) (imagegen.LedgerPage, error) {
	return imagegen.LedgerPage{}, errBroken
}
func (extensionsDownStore) ListTasks(context.Context, string, imagegen.Status, int, string) (imagegen.TaskPage, error) {
	return imagegen.TaskPage{}, errBroken
}
func (extensionsDownStore) SharedSecret(context.Context, string, func() []byte) ([]byte, error) {
	return nil, errBroken
}
func (extensionsDownStore) BeginIdempotent(context.Context, string, string, string, string, time.Duration, time.Duration) (*imagegen.IdempotencyRecord, error) {
	return nil, errBroken
}

// imageLostStore fails to read images.
type imageLostStore struct{ imagegen.Store }

func (imageLostStore) Image(context.Context, string) (*imagegen.Image, error) { return nil, errBroken }

// imageShortStore records every image as 10 bytes longer than its
// bytes: a download finds the bytes short (a 500, logged).
type imageShortStore struct{ imagegen.Store }

func (s imageShortStore) Image(ctx context.Context, id string) (*imagegen.Image, error) {
	img, err := s.Store.Image(ctx, id)
	if err == nil {
		img.Size += 10
	}
	return img, err
}

// runAll runs the workers until no task is ready.
func (e *env) runAll() {
	for range 100 {
		ran, err := e.svc.RunOnce(context.Background())
		is.New(e.t).NoErr(err)
		if !ran {
			return
		}
	}
}

func taskID(t *testing.T, x *exchange) string {
	t.Helper()
	var sub wire.Submitted
	is.New(t).NoErr(json.Unmarshal(x.respBody, &sub))
	return sub.TaskID
}

// spec is a loaded, valid description with its router.
type spec struct {
	doc    *openapi3.T
	router routers.Router
}

func loadSpec(t *testing.T, data []byte, opts ...openapi3.ValidationOption) spec {
	t.Helper()
	is := is.New(t)
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(data)
	is.NoErr(err)
	is.NoErr(doc.Validate(loader.Context, opts...))
	router, err := gorillamux.NewRouter(doc)
	is.NoErr(err)
	return spec{doc: doc, router: router}
}

func bearerOnly(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	if in.SecurityScheme.Type != "http" || in.SecurityScheme.Scheme != "bearer" {
		return fmt.Errorf("unexpected security scheme %q", in.SecuritySchemeName)
	}
	auth := in.RequestValidationInput.Request.Header.Get("Authorization")
	if len(auth) <= len("Bearer ") || !strings.EqualFold(auth[:len("Bearer ")], "Bearer ") {
		return errors.New("no bearer token")
	}
	return nil
}

// check validates an exchange: the request against the description (its
// error is returned, as some requests are meant to be refused) and the
// answer, which must always follow the description.
func (s spec) check(x *exchange) (route *routers.Route, reqErr, respErr error) {
	ctx := context.Background()
	r := x.request()
	route, params, routeErr := s.router.FindRoute(r)
	if x.component != "" {
		if routeErr == nil {
			return route, nil, fmt.Errorf("%s %s has a route, but %s was expected", x.method, x.target, x.component)
		}
		resp := s.doc.Components.Responses[x.component]
		if resp == nil {
			return nil, nil, fmt.Errorf("no components.responses.%s", x.component)
		}
		route = &routers.Route{Spec: s.doc, Method: x.method, Path: r.URL.Path,
			Operation: &openapi3.Operation{Responses: openapi3.NewResponses(openapi3.WithStatus(x.status, resp))}}
	} else if routeErr != nil {
		return nil, nil, fmt.Errorf("no route for %s %s: %w", x.method, x.target, routeErr)
	}
	in := &openapi3filter.RequestValidationInput{
		Request: r, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: bearerOnly, MultiError: true},
	}
	if x.component == "" {
		reqErr = openapi3filter.ValidateRequest(ctx, in)
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in,
		Status:                 x.status,
		Header:                 x.respHeader,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	out.SetBodyBytes(x.respBody)
	return route, reqErr, openapi3filter.ValidateResponse(ctx, out)
}

func readSpecFile(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile("openapi.json")
	is.New(t).NoErr(err)
	return data
}

// TestOpenAPIConformance drives the real handler through every endpoint
// and error and validates every request and every answer against
// openapi.json; it also checks that every answer the description lists
// was seen.
func TestOpenAPIConformance(t *testing.T) {
	is := is.New(t)
	s := loadSpec(t, readSpecFile(t))
	rc := recordExchanges(t)

	type outcome struct{ path, method, status string }
	seen := map[outcome]bool{}
	codes := map[string]bool{}
	for _, x := range rc.all {
		route, reqErr, respErr := s.check(x)
		if respErr != nil {
			t.Errorf("%s: %s %s -> %d: answer does not follow the description: %v\n%s", x.name, x.method, x.target, x.status, respErr, x.respBody)
		}
		if (reqErr == nil) != x.specValid {
			t.Errorf("%s: %s %s: request valid per description = %v, want %v (%v)", x.name, x.method, x.target, reqErr == nil, x.specValid, reqErr)
		}
		if x.component != "" {
			seen[outcome{"components", x.component, strconv.Itoa(x.status)}] = true
		} else if route != nil {
			seen[outcome{route.Path, strings.ToLower(x.method), strconv.Itoa(x.status)}] = true
		}
		if x.status >= 400 {
			is.Equal(x.respHeader.Get("Content-Type"), "application/json")
		}
		if strings.HasPrefix(x.target, "/v1/") { // OpenAI's error shapes and codes
			if x.status == http.StatusTooManyRequests && !bytes.Contains(x.respBody, []byte(`"insufficient_quota"`)) {
				is.True(x.respHeader.Get("Retry-After") != "")
			}
			continue
		}
		if x.status >= 400 {
			codes[x.errorCode()] = true
		}
		if x.status == http.StatusTooManyRequests {
			is.True(x.respHeader.Get("Retry-After") != "")
		}
	}

	// Every answer the description lists was produced by the handler.
	for path, item := range s.doc.Paths.Map() {
		for method, op := range item.Operations() {
			for status := range op.Responses.Map() {
				if !seen[outcome{path, strings.ToLower(method), status}] {
					t.Errorf("no exchange produced %s %s -> %s", method, path, status)
				}
			}
		}
	}
	is.True(seen[outcome{"components", "NotFound", "404"}])
	is.True(seen[outcome{"components", "MethodNotAllowed", "405"}])
	for _, code := range []wire.APIErrorCode{
		wire.APIUnauthorized, wire.APIInsufficientCredits, wire.APITaskNotFound, wire.APIInvalidParams,
		wire.APIRateLimitExceeded, wire.APIInternalError, wire.APINotFound, wire.APIMethodNotAllowed, wire.APIRequestTooLarge,
		wire.APIIdempotencyKeyInUse, wire.APITaskAlreadyFinished, wire.APIPreconditionFailed, wire.APIRangeNotSatisfiable,
		wire.APIStorageUnavailable, wire.APIStorageTimeout,
	} {
		if !codes[string(code)] {
			t.Errorf("no exchange produced error code %s", code)
		}
	}
	// The description's list of codes is exactly the handler's.
	var enum []string
	for _, v := range s.doc.Components.Schemas["Error"].Value.Properties["error"].Value.Properties["code"].Value.Enum {
		enum = append(enum, v.(string))
	}
	got := slices.Sorted(func(yield func(string) bool) {
		for c := range codes {
			if !yield(c) {
				return
			}
		}
	})
	slices.Sort(enum)
	is.Equal(enum, got)
}

// TestOpenAPIRejectsMutations: a copy of the description with one field
// or header renamed must reject the real exchanges, so the conformance
// test cannot pass against a description that drifted from the handler.
func TestOpenAPIRejectsMutations(t *testing.T) {
	rc := recordExchanges(t)
	original := readSpecFile(t)
	for _, m := range []struct {
		name     string
		exchange string // an exchange the mutated description must reject
		request  bool   // the request is rejected, not the answer
		mutate   func(doc map[string]any)
	}{
		{"submit: credits_remaining renamed", "submit text-to-image", false, renameIn("Submitted", "credits_remaining", "credits_left")},
		{"pending task: task_id renamed", "poll pending", false, renameIn("TaskInProgress", "task_id", "id")},
		{"task: images renamed", "poll success", false, renameIn("TaskSucceeded", "images", "image_urls")},
		{"task: error renamed", "poll failed", false, renameIn("TaskFailed", "error", "reason")},
		{"error: code renamed", "task not found", false, func(doc map[string]any) {
			rename(dig(schema(doc, "Error"), "properties", "error"), "code", "error_code")
		}},
		{"status value changed", "poll processing", false, func(doc map[string]any) {
			dig(schema(doc, "TaskInProgress"), "properties", "status")["enum"] = []any{"pending", "running"}
		}},
		{"RateLimit header renamed", "submit text-to-image", false, func(doc map[string]any) {
			headers := dig(doc, "paths", "/generate", "post", "responses", "201", "headers")
			headers["RateLimit-Remaining"] = headers["RateLimit"]
			delete(headers, "RateLimit")
		}},
		{"request: aspect_ratio renamed", "submit text-to-image", true, renameIn("GenerationRequest", "aspect_ratio", "ratio")},
		// The optional extensions.
		{"failed task: error_code renamed", "poll failed", false, renameIn("TaskFailed", "error_code", "failure_code")},
		{"failure code value changed", "cancel pending", false, func(doc map[string]any) {
			code := schema(doc, "FailureCode")
			code["enum"] = slices.Replace(code["enum"].([]any), 4, 5, any("canceled"))
		}},
		{"credits: credits_remaining renamed", "credits", false, renameIn("Credits", "credits_remaining", "balance")},
		{"list: next_cursor renamed", "list first page", false, renameIn("TaskList", "next_cursor", "cursor")},
		{"list: tasks renamed", "list last page", false, renameIn("TaskList", "tasks", "items")},
		{"Idempotent-Replayed value changed", "idempotent submit replayed", false, func(doc map[string]any) {
			dig(doc, "components", "headers", "Idempotent-Replayed", "schema")["const"] = "1"
		}},
		{"Vary header renamed", "poll pending", false, func(doc map[string]any) {
			headers := dig(doc, "paths", "/tasks/{task_id}", "get", "responses", "200", "headers")
			headers["Vary-Prefer"] = headers["Vary"]
			delete(headers, "Vary")
		}},
		{"Preference-Applied value changed", "long poll times out", false, func(doc map[string]any) {
			dig(doc, "components", "headers", "Preference-Applied", "schema")["pattern"] = "^wait=[0-9]+s$"
		}},
		{"request: callback_url renamed", "submit with callback_url", true, renameIn("GenerationRequest", "callback_url", "webhook_url")},
		{"webhook secret: secret renamed", "webhook secret", false, renameIn("WebhookSecret", "secret", "webhook_secret")},
		{"webhook secret: prefix changed", "webhook secret", false, func(doc map[string]any) {
			dig(schema(doc, "WebhookSecret"), "properties", "secret")["pattern"] = "^whsec-"
		}},
		{"webhook secret: Cache-Control changed", "webhook secret", false, func(doc map[string]any) {
			dig(doc, "paths", "/webhook-secret", "get", "responses", "200", "headers", "Cache-Control", "schema")["const"] = "private"
		}},
		{"webhook secret rotation: secret renamed", "webhook secret rotate", false, renameIn("WebhookSecretRotation", "secret", "new_secret")},
		{"webhook secret rotation: previous_expires_at renamed", "webhook secret rotate", false,
			renameIn("WebhookSecretRotation", "previous_expires_at", "previous_valid_until")},
		{"webhook secret rotation: Cache-Control changed", "webhook secret rotate", false, func(doc map[string]any) {
			dig(doc, "paths", "/webhook-secret/rotate", "post", "responses", "200", "headers", "Cache-Control", "schema")["const"] = "private"
		}},
		{"full view: started_at renamed", "poll success, full view", false, renameIn("TaskFull", "started_at", "began_at")},
		{"full view: queue_position renamed", "poll pending, full view", false, renameIn("TaskFull", "queue_position", "position")},
		{"full view: seed not nullable", "poll failed, full view", false, func(doc map[string]any) {
			dig(schema(doc, "TaskFull"), "properties", "seed")["type"] = "integer"
		}},
		{"ledger: balance_after renamed", "ledger first page", false, renameIn("LedgerEntry", "balance_after", "balance")},
		{"ledger: entries renamed", "ledger last page", false, renameIn("Ledger", "entries", "items")},
		{"request: seed renamed", "submit with seed", true, renameIn("GenerationRequest", "seed", "random_seed")},
		{"request: callback_events value changed", "submit with callback_events", true, func(doc map[string]any) {
			dig(schema(doc, "GenerationRequest"), "properties", "callback_events", "items")["enum"] = []any{"started", "completed"}
		}},
		{"openai: data item url renamed", "openai: url", false, func(doc map[string]any) {
			rename(dig(schema(doc, "OpenAIImagesResponse"), "properties", "data", "items"), "url", "image_url")
		}},
		{"openai: error type renamed", "openai: bad size", false, func(doc map[string]any) {
			rename(dig(schema(doc, "OpenAIError"), "properties", "error"), "type", "kind")
		}},
		{"openai: size not a string", "openai: b64_json", true, func(doc map[string]any) {
			dig(schema(doc, "OpenAIImagesRequest"), "properties", "size")["type"] = "integer"
		}},
		{"request: Idempotency-Key narrowed", "idempotent submit", true, func(doc map[string]any) {
			params := dig(doc, "paths", "/generate", "post")["parameters"].([]any)
			params[0].(map[string]any)["schema"].(map[string]any)["maxLength"] = 4
		}},
	} {
		t.Run(m.name, func(t *testing.T) {
			is := is.New(t)
			var doc map[string]any
			is.NoErr(json.Unmarshal(original, &doc))
			m.mutate(doc)
			data, err := json.Marshal(doc)
			is.NoErr(err)
			s := loadSpec(t, data, openapi3.DisableExamplesValidation()) // the examples follow the original
			_, reqErr, respErr := s.check(rc.find(m.exchange))
			if m.request {
				is.True(reqErr != nil) // the mutated description refuses the real request
			} else {
				is.True(respErr != nil) // the mutated description refuses the real answer
			}
		})
	}
}

func schema(doc map[string]any, name string) map[string]any {
	return dig(doc, "components", "schemas", name)
}

func dig(m map[string]any, path ...string) map[string]any {
	for _, p := range path {
		m = m[p].(map[string]any)
	}
	return m
}

// renameIn is a mutation that renames property from of the schema named
// name to to.
func renameIn(name, from, to string) func(doc map[string]any) {
	return func(doc map[string]any) { rename(schema(doc, name), from, to) }
}

// rename renames a property of an object schema, in properties and in
// required.
func rename(s map[string]any, from, to string) {
	props := s["properties"].(map[string]any)
	props[to] = props[from]
	delete(props, from)
	if req, ok := s["required"].([]any); ok {
		for i, r := range req {
			if r == from {
				req[i] = to
			}
		}
	}
}

func TestOpenAPIServed(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	w := e.do("GET", "/api/v1/openapi.json", "", "")
	is.Equal(w.Code, http.StatusOK)
	is.Equal(w.Header().Get("Content-Type"), "application/json")
	is.Equal(w.Body.Bytes(), readSpecFile(t)) // the file, as it is
	is.Equal(e.do("HEAD", "/api/v1/openapi.json", "", "").Body.Len(), 0)
	wantError(t, e.do("PUT", "/api/v1/openapi.json", "", "{}"), http.StatusMethodNotAllowed, wire.APIMethodNotAllowed)

	// Mounted elsewhere, it names its own prefix as the server.
	rec := doOn(e.handlerWith(httpapi.Config{Prefix: "/img/v2/"}), "GET", "/img/v2/openapi.json", "", "")
	is.Equal(rec.Code, http.StatusOK)
	body, err := io.ReadAll(rec.Body)
	is.NoErr(err)
	is.Equal(body, httpapi.OpenAPI("/img/v2"))
	s := loadSpec(t, body)
	is.Equal(len(s.doc.Servers), 1)
	is.Equal(s.doc.Servers[0].URL, "/img/v2")
	is.Equal(string(httpapi.OpenAPI("/img/v2")), strings.Replace(string(readSpecFile(t)), `"url": "/api/v1"`, `"url": "/img/v2"`, 1))
	is.Equal(httpapi.OpenAPI(""), readSpecFile(t))
}

// allowAll is a limiter that allows everything.
type allowAll struct{}

func (allowAll) Allow(context.Context, string) (imagegen.LimitResult, error) {
	return imagegen.LimitResult{Allowed: true, Limit: 1, Window: time.Minute, Remaining: 1}, nil
}

// Every JSON body the API answers, success or error, OpenAI-shaped or
// not, ends with a newline, as curl users and line-based tools expect.
func TestEveryJSONBodyEndsWithANewline(t *testing.T) {
	rc := recordExchanges(t)
	n := 0
	for _, x := range rc.all {
		if !strings.HasPrefix(x.respHeader.Get("Content-Type"), "application/json") || len(x.respBody) == 0 {
			continue
		}
		n++
		if x.respBody[len(x.respBody)-1] != '\n' {
			t.Errorf("%s: %s %s -> %d: the body does not end with a newline: %q", x.name, x.method, x.target, x.status, x.respBody)
		}
	}
	if n < 50 {
		t.Fatalf("only %d JSON bodies recorded", n)
	}
}
