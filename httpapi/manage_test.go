package httpapi_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/wire"
)

func TestCancel(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	id := e.submitted() // alice: 10 - 2
	mallory := e.user("mallory", 0)
	wantError(t, e.do("POST", "/api/v1/tasks/"+id+"/cancel", mallory, ""), http.StatusNotFound, wire.APITaskNotFound)

	w := e.do("POST", "/api/v1/tasks/"+id+"/cancel", e.key, "")
	is.Equal(w.Code, http.StatusOK)
	m, keys := fields(t, w)
	is.Equal(keys, []string{"error", "error_code", "status", "task_id"})
	is.Equal(m["status"], "failed")
	is.Equal(m["error"], "cancelled")
	is.Equal(m["error_code"], "cancelled")
	bal, err := e.svc.Balance(context.Background(), "alice")
	is.NoErr(err)
	is.Equal(bal, int64(10)) // a pending task: refunded

	wantError(t, e.do("POST", "/api/v1/tasks/"+id+"/cancel", e.key, ""), http.StatusConflict, wire.APITaskAlreadyFinished)
	// Another user learns nothing, not even that the task has ended.
	wantError(t, e.do("POST", "/api/v1/tasks/"+id+"/cancel", mallory, ""), http.StatusNotFound, wire.APITaskNotFound)
	done := e.submitted()
	_, err = e.svc.RunOnce(context.Background())
	is.NoErr(err)
	wantError(t, e.do("POST", "/api/v1/tasks/"+done+"/cancel", mallory, ""), http.StatusNotFound, wire.APITaskNotFound)
	wantError(t, e.do("POST", "/api/v1/tasks/"+done+"/cancel", e.key, ""), http.StatusConflict, wire.APITaskAlreadyFinished)
	wantError(t, e.do("GET", "/api/v1/tasks/"+id+"/cancel", e.key, ""), http.StatusMethodNotAllowed, wire.APIMethodNotAllowed)
}

func TestListAndCredits(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	var ids []string
	for i := 0; i < 3; i++ {
		ids = append(ids, e.submitted())
		e.clock.Advance(time.Millisecond)
	}
	_, err := e.svc.RunOnce(context.Background()) // the oldest succeeds
	is.NoErr(err)

	var list wire.TaskList
	w := e.do("GET", "/api/v1/tasks?limit=2", e.key, "")
	is.Equal(w.Code, http.StatusOK)
	is.NoErr(json.Unmarshal(w.Body.Bytes(), &list))
	is.Equal(len(list.Tasks), 2)
	is.Equal(list.Tasks[0].TaskID, ids[2]) // newest first
	is.Equal(list.Tasks[1].TaskID, ids[1])
	is.True(list.NextCursor != "")
	w = e.do("GET", "/api/v1/tasks?limit=2&cursor="+list.NextCursor, e.key, "")
	list = wire.TaskList{}
	is.NoErr(json.Unmarshal(w.Body.Bytes(), &list))
	is.Equal(len(list.Tasks), 1)
	is.Equal(list.Tasks[0].TaskID, ids[0])
	is.Equal(list.Tasks[0].Status, imagegen.StatusSuccess)
	is.Equal(len(list.Tasks[0].Images), 1)
	is.Equal(list.NextCursor, "")

	w = e.do("GET", "/api/v1/tasks?status=pending", e.key, "")
	list = wire.TaskList{}
	is.NoErr(json.Unmarshal(w.Body.Bytes(), &list))
	is.Equal(len(list.Tasks), 2)

	// Another user's list is their own.
	w = e.do("GET", "/api/v1/tasks", e.user("bob", 0), "")
	m, _ := fields(t, w)
	is.Equal(m["tasks"], []any{})

	// Every bad parameter is refused with a message that names it:
	// unknown and repeated ones too, rather than ignored.
	for q, field := range map[string]string{
		"status=done":                        "status",
		"status=Pending":                     "status",
		"limit=0":                            "limit",
		"limit=101":                          "limit",
		"limit=x":                            "limit",
		"limit=-1":                           "limit",
		"cursor=bogus":                       "cursor",
		"limt=5":                             "limt",
		"page=2&limit=5":                     "page",
		"status=pending&status=failed":       "status",
		"limit=2&limit=3":                    "limit",
		"status=%zz":                         "query",
		"cursor=" + strings.Repeat("7", 257): "cursor",
	} {
		msg := wantError(t, e.do("GET", "/api/v1/tasks?"+q, e.key, ""), http.StatusUnprocessableEntity, wire.APIInvalidParams)
		if !strings.HasPrefix(msg, field+": ") {
			t.Errorf("GET /tasks?%s: message %q does not name %s", q, msg, field)
		}
	}
	for _, q := range []string{"", "status=&limit=&cursor=", "limit=100"} { // empty values are the defaults
		is.Equal(e.do("GET", "/api/v1/tasks?"+q, e.key, "").Code, http.StatusOK)
	}

	w = e.do("GET", "/api/v1/credits", e.key, "")
	m, keys := fields(t, w)
	is.Equal(keys, []string{"credits_remaining"})
	is.Equal(m["credits_remaining"], 4.0) // 10 - 3 x 2
}

func TestIdempotentSubmit(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	first := e.do("POST", "/api/v1/generate", e.key, t2i, "Idempotency-Key", "order-1")
	is.Equal(first.Code, http.StatusCreated)

	again := e.do("POST", "/api/v1/generate", e.key, t2i, "Idempotency-Key", "order-1")
	is.Equal(again.Code, http.StatusCreated)
	is.Equal(again.Body.String(), first.Body.String()) // the same task, the same balance
	is.Equal(again.Header().Get("Idempotent-Replayed"), "true")
	bal, err := e.svc.Balance(context.Background(), "alice")
	is.NoErr(err)
	is.Equal(bal, int64(8)) // charged once

	other := `{"scene":"text-to-image","prompt":"something else"}`
	msg := wantError(t, e.do("POST", "/api/v1/generate", e.key, other, "Idempotency-Key", "order-1"), http.StatusUnprocessableEntity, wire.APIInvalidParams)
	is.True(len(msg) > 0)

	// Another user may use the same key.
	w := e.do("POST", "/api/v1/generate", e.user("bob", 2), t2i, "Idempotency-Key", "order-1")
	is.Equal(w.Code, http.StatusCreated)

	// While the first request with a key runs, a second one is refused.
	sum := sha256.Sum256([]byte(t2i))
	rec, err := e.stack.Store.BeginIdempotent(context.Background(), "alice", "order-2", hex.EncodeToString(sum[:]), "", time.Minute, time.Hour)
	is.NoErr(err)
	is.True(rec == nil)
	wantError(t, e.do("POST", "/api/v1/generate", e.key, t2i, "Idempotency-Key", "order-2"), http.StatusConflict, wire.APIIdempotencyKeyInUse)

	// A refusal that depends on more than the body is not kept: after a
	// wrong Content-Type, the same key and body go through.
	wantError(t, e.do("POST", "/api/v1/generate", e.key, t2i, "Idempotency-Key", "order-3", "Content-Type", "text/plain"),
		http.StatusUnprocessableEntity, wire.APIInvalidParams)
	w = e.do("POST", "/api/v1/generate", e.key, t2i, "Idempotency-Key", "order-3")
	is.Equal(w.Code, http.StatusCreated)
	is.Equal(w.Header().Get("Idempotent-Replayed"), "")

	// Bad keys are refused.
	long := make([]byte, 256)
	for i := range long {
		long[i] = 'a'
	}
	wantError(t, e.do("POST", "/api/v1/generate", e.key, t2i, "Idempotency-Key", string(long)), http.StatusUnprocessableEntity, wire.APIInvalidParams)
	w = e.do("POST", "/api/v1/generate", e.key, t2i, "Idempotency-Key", string(long[:255])) // the longest allowed
	is.Equal(w.Code, http.StatusCreated)
	msg = wantError(t, e.do("POST", "/api/v1/generate", e.key, t2i, "Idempotency-Key", ""), http.StatusUnprocessableEntity, wire.APIInvalidParams)
	is.True(strings.HasPrefix(msg, "Idempotency-Key: "))
	r := httptest.NewRequest("POST", "/api/v1/generate", strings.NewReader(t2i))
	r.Header.Set("Authorization", "Bearer "+e.key)
	r.Header.Set("Content-Type", "application/json")
	r.Header["Idempotency-Key"] = []string{"order-9", "order-10"}
	rw := httptest.NewRecorder()
	e.h.ServeHTTP(rw, r)
	msg = wantError(t, rw, http.StatusUnprocessableEntity, wire.APIInvalidParams)
	is.Equal(msg, "Idempotency-Key: must be given once")
	bal, err = e.svc.Balance(context.Background(), "alice")
	is.NoErr(err)
	is.Equal(bal, int64(4)) // 10 - order-1 - order-3 - the 255-character key: refused requests charged nothing
}

func TestFailedTaskHasErrorCode(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	e.model.Then(func(context.Context, imagegen.Generation) ([]imagegen.GeneratedImage, error) {
		return nil, &imagegen.ModelError{Provider: "scripted", Refused: true, Message: "no"}
	})
	id := e.submitted()
	_, err := e.svc.RunOnce(context.Background())
	is.NoErr(err)
	m, keys := fields(t, e.poll(e.key, id))
	is.Equal(keys, []string{"error", "error_code", "status", "task_id"})
	is.Equal(m["error_code"], "content_policy")
}
