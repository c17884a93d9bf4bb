package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/httpapi"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/store/memory"
	"github.com/imagegen/imagegen/wire"
)

// lostAnswerStore creates the task, charged, then fails as a store
// whose answer was lost after the write does (a timeout, a dropped
// connection): the caller cannot tell whether the task exists.
type lostAnswerStore struct{ *memory.Store }

func (s lostAnswerStore) CreateTask(ctx context.Context, t *imagegen.Task, p imagegen.CreateParams) (int64, error) {
	if _, err := s.Store.CreateTask(ctx, t, p); err != nil {
		return 0, err
	}
	return 0, errors.New("i/o timeout after the write")
}

// An OpenAI request whose submit fails after the store made the task is
// answered with a 500, which OpenAI's SDKs retry with a fresh submit:
// the task it may have made, charged, must be cancelled and refunded,
// or each retry charges again for an image nobody receives.
func TestOpenAISubmitOfUnknownOutcomeCancelsAndRefunds(t *testing.T) {
	is := is.New(t)
	o := newOpenAIEnv(t, 1000)
	o.env = newEnv(t, func(opt *envOptions) {
		opt.openAI = true
		opt.store = lostAnswerStore{testenv.Memory(t, memory.Config{Clock: imagegentest.NewClock(time.Time{}), Retention: retention})}
		opt.api = func(c *httpapi.Config) { c.OpenAIWait = 30 * time.Second }
	})
	w := o.do("POST", "/v1/images/generations", o.key, `{"prompt":"otter"}`)
	o.errorShape(t, w, http.StatusInternalServerError, "server_error", "", "")
	is.Equal(o.credits(), int64(10)) // refunded: a retry costs nothing more
	var list wire.TaskList
	is.NoErr(json.Unmarshal(o.do("GET", "/api/v1/tasks", o.key, "").Body.Bytes(), &list))
	is.Equal(len(list.Tasks), 1)
	is.Equal(list.Tasks[0].Status, imagegen.StatusFailed)
	is.Equal(list.Tasks[0].ErrorCode, imagegen.CodeCancelled)
}
