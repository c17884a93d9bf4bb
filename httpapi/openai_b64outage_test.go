package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/httpapi"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/store/memory"
)

// unreadableBlobs is a BlobStore whose reads fail once broken is set;
// writes go on, so a worker still records its images.
type unreadableBlobs struct {
	imagegen.BlobStore
	broken *atomic.Bool
}

func (u unreadableBlobs) Open(ctx context.Context, key string) (*imagegen.Blob, error) {
	if u.broken.Load() {
		return nil, errors.New("object storage unreachable")
	}
	return u.BlobStore.Open(ctx, key)
}

// unreadableBlobStore is the memory store with unreadableBlobs as its
// BlobStore.
type unreadableBlobStore struct {
	*memory.Store
	blobs unreadableBlobs
}

func (s unreadableBlobStore) Blobs() imagegen.BlobStore { return s.blobs }

// A b64_json answer whose image cannot be read after the task succeeded
// (charged, the image made) is a 500 that OpenAI's SDKs must not retry:
// each retry would submit, and charge, again. It says so
// (x-should-retry: false) and names the task, whose images the native
// API serves once the image store is back.
func TestOpenAIB64UnreadableImageIsNotRetried(t *testing.T) {
	is := is.New(t)
	var broken atomic.Bool
	mem := testenv.Memory(t, memory.Config{Clock: imagegentest.NewClock(time.Time{}), Retention: retention})
	o := newOpenAIEnv(t, 1000)
	o.env = newEnv(t, func(opt *envOptions) {
		opt.openAI = true
		opt.store = unreadableBlobStore{Store: mem, blobs: unreadableBlobs{BlobStore: mem.Blobs(), broken: &broken}}
		opt.api = func(c *httpapi.Config) { c.OpenAIWait = 30 * time.Second }
	})
	broken.Store(true)
	w := o.generate(o.key, `{"prompt":"otter","response_format":"b64_json"}`)
	o.errorShape(t, w, http.StatusInternalServerError, "server_error", "", "")
	is.Equal(w.Header().Get("X-Should-Retry"), "false") // a retry would charge again
	var list struct {
		Tasks []struct {
			ID     string          `json:"task_id"`
			Status imagegen.Status `json:"status"`
		} `json:"tasks"`
	}
	is.NoErr(json.Unmarshal(o.do("GET", "/api/v1/tasks", o.key, "").Body.Bytes(), &list))
	is.Equal(len(list.Tasks), 1)
	is.Equal(list.Tasks[0].Status, imagegen.StatusSuccess)
	is.True(strings.Contains(w.Body.String(), list.Tasks[0].ID)) // the answer names the task to fetch later
}
