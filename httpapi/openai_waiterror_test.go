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

// watchDownStore cannot watch tasks: every wait for a task fails.
type watchDownStore struct{ *memory.Store }

func (watchDownStore) WatchTask(context.Context, string) (<-chan struct{}, func(), error) {
	return nil, nil, errors.New("pub/sub down")
}

// An OpenAI request whose wait fails is answered with a 500, which
// OpenAI's SDKs retry with a fresh submit: its task, charged and still
// queued, must be cancelled and refunded, or each retry charges again
// for a task whose image nobody will ever receive.
func TestOpenAIWaitErrorCancelsAndRefunds(t *testing.T) {
	is := is.New(t)
	o := newOpenAIEnv(t, 1000) // for its OpenAI schemas; its env is replaced by one on the store below
	o.env = newEnv(t, func(opt *envOptions) {
		opt.openAI = true
		opt.store = watchDownStore{testenv.Memory(t, memory.Config{Clock: imagegentest.NewClock(time.Time{}), Retention: retention})}
		opt.api = func(c *httpapi.Config) { c.OpenAIWait = 30 * time.Second }
	})
	w := o.do("POST", "/v1/images/generations", o.key, `{"prompt":"otter"}`)
	o.errorShape(t, w, http.StatusInternalServerError, "server_error", "", "")
	is.Equal(o.credits(), int64(10)) // cancelled and refunded: a retry costs nothing more
	var list wire.TaskList
	is.NoErr(json.Unmarshal(o.do("GET", "/api/v1/tasks", o.key, "").Body.Bytes(), &list))
	is.Equal(len(list.Tasks), 1)
	is.Equal(list.Tasks[0].Status, imagegen.StatusFailed)
	is.Equal(list.Tasks[0].ErrorCode, imagegen.CodeCancelled)
}
