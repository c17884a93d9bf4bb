package httpapi_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/store/memory"
	"github.com/imagegen/imagegen/wire"
)

// pickyStore is the memory store that refuses, as PostgreSQL does, a
// task id that is not valid UTF-8 or holds NUL: an error, not "not
// found".
type pickyStore struct{ *memory.Store }

var errUnstorable = errors.New("invalid byte sequence for encoding UTF8")

func unstorable(s string) bool { return !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 }

func (s pickyStore) Task(ctx context.Context, owner, id string) (*imagegen.Task, error) {
	if unstorable(id) {
		return nil, errUnstorable
	}
	return s.Store.Task(ctx, owner, id)
}

func (s pickyStore) CancelTask(ctx context.Context, owner, id string, p imagegen.CancelParams) (int64, error) {
	if unstorable(id) {
		return 0, errUnstorable
	}
	return s.Store.CancelTask(ctx, owner, id, p)
}

// A task id in the path that is not valid UTF-8 or holds NUL names no
// task: 404 task_not_found on a poll, a long poll and a cancel, never
// the store's error as a 500.
func TestOddTaskIDsAreNotFound(t *testing.T) {
	e := newEnv(t, func(o *envOptions) {
		o.store = pickyStore{o.store.(*memory.Store)}
	})
	for _, id := range []string{"%00", "a%00b", "%FF", "a%C0%80"} {
		for _, c := range []struct{ method, path, prefer string }{
			{"GET", "/api/v1/tasks/" + id, ""},
			{"GET", "/api/v1/tasks/" + id + "?view=full", ""},
			{"GET", "/api/v1/tasks/" + id, "wait=1"},
			{"POST", "/api/v1/tasks/" + id + "/cancel", ""},
		} {
			t.Run(c.method+" "+c.path+" "+c.prefer, func(t *testing.T) {
				var hdr []string
				if c.prefer != "" {
					hdr = []string{"Prefer", c.prefer}
				}
				answer := make(chan *httptest.ResponseRecorder, 1)
				go func() { answer <- e.do(c.method, c.path, e.key, "", hdr...) }()
				select {
				case w := <-answer:
					wantError(t, w, http.StatusNotFound, wire.APITaskNotFound)
				case <-time.After(10 * time.Second):
					t.Fatal("no answer")
				}
			})
		}
	}
}
