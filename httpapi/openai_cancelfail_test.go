package httpapi_test

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
	"github.com/imagegen/imagegen/store/memory"
)

// cancelDownStore fails every cancel, as a store that is down would.
type cancelDownStore struct{ *memory.Store }

func (cancelDownStore) CancelTask(context.Context, string, string, imagegen.CancelParams) (int64, error) {
	return 0, errors.New("store down")
}

// watchAndCancelDownStore fails every wait for a task, and every cancel.
type watchAndCancelDownStore struct{ cancelDownStore }

func (watchAndCancelDownStore) WatchTask(context.Context, string) (<-chan struct{}, func(), error) {
	return nil, nil, errors.New("pub/sub down")
}

func cancelDown(m *memory.Store) imagegen.Store { return cancelDownStore{m} }

// An OpenAI request that gives up on its task (out of time, at shutdown,
// or when its wait fails) cancels it; when the cancel fails, the task is
// still queued and charged. The answer said it was cancelled and refunded
// anyway, and at shutdown (or for the wait's 500) asked for a retry,
// which submits and charges again. It must
// say the task could not be cancelled, name it, and not ask for a retry.
func TestOpenAIGiveUpWhoseCancelFailsSaysSo(t *testing.T) {
	for _, c := range []struct {
		name   string
		status int
		code   string
		store  func(*memory.Store) imagegen.Store
		end    func(o *openAIEnv) // nil: the request does not wait
	}{
		{"timeout", http.StatusGatewayTimeout, "timeout", cancelDown, func(o *openAIEnv) { o.clock.Advance(30 * time.Second) }},
		{"drain", http.StatusServiceUnavailable, "server_shutting_down", cancelDown, func(o *openAIEnv) { o.api.Drain() }},
		{"wait error", http.StatusInternalServerError, "", func(m *memory.Store) imagegen.Store {
			return watchAndCancelDownStore{cancelDownStore{m}}
		}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			o := newOpenAIEnv(t, 1000) // for its OpenAI schemas; its env is replaced by one on the store below
			o.env = newEnv(t, func(opt *envOptions) {
				opt.openAI = true
				opt.store = c.store(opt.store.(*memory.Store))
				opt.api = func(c *httpapi.Config) { c.OpenAIWait = 30 * time.Second }
			})
			generate := func() *httptest.ResponseRecorder {
				return o.do("POST", "/v1/images/generations", o.key, `{"prompt":"otter"}`)
			}
			var w *httptest.ResponseRecorder
			if c.end == nil {
				w = generate()
			} else {
				done := startWaiting(t, o.clock, generate) // no worker runs: it waits
				c.end(o)
				w = <-done
			}
			o.errorShape(t, w, c.status, "server_error", "", c.code)
			is.Equal(w.Header().Get("X-Should-Retry"), "false") // a retry would be charged again
			is.Equal(w.Header().Get("Retry-After"), "")
			var list struct {
				Tasks []struct {
					ID     string          `json:"id"`
					Status imagegen.Status `json:"status"`
				} `json:"tasks"`
			}
			is.NoErr(json.Unmarshal(o.do("GET", "/api/v1/tasks", o.key, "").Body.Bytes(), &list))
			is.Equal(len(list.Tasks), 1)
			is.Equal(list.Tasks[0].Status, imagegen.StatusPending) // not cancelled
			is.Equal(o.credits(), int64(8))                        // still charged (the cost, 2)
			msg := w.Body.String()
			is.True(!strings.Contains(msg, "refunded"))      // it was not
			is.True(strings.Contains(msg, list.Tasks[0].ID)) // where its result will be
		})
	}
}
