package httpapi_test

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/store/memory"
	"github.com/imagegen/imagegen/wire"
)

// recordOutageStore is a Store whose image records cannot be read: the
// lookup times out (as go-redis does when Redis is paused) or fails (a
// refused connection).
type recordOutageStore struct {
	imagegen.Store
	fail atomic.Pointer[error]
}

func (s *recordOutageStore) Image(ctx context.Context, id string) (*imagegen.Image, error) {
	if err := s.fail.Load(); err != nil {
		return nil, *err
	}
	return s.Store.Image(ctx, id)
}

// timeoutErr is a network timeout, as a client library reports a server
// that does not answer ("i/o timeout").
type timeoutErr struct{}

func (timeoutErr) Error() string   { return "read tcp 127.0.0.1:1->127.0.0.1:6379: i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

var _ net.Error = timeoutErr{}

// A download whose image record the store cannot read (the store, often
// the image store too, is down or paused) is the store's outage, in the
// image routes' JSON shape with Retry-After: 504 when it did not answer
// in time, 503 when it failed; never a 500 for the client to give up on.
func TestDownloadWhenTheImageRecordCannotBeRead(t *testing.T) {
	st := &recordOutageStore{Store: testenv.Memory(t, memory.Config{Retention: retention})}
	e := newEnv(t, func(o *envOptions) { o.store = st })
	path, _ := e.imagePath()
	for _, c := range []struct {
		err    error
		status int
		code   wire.APIErrorCode
	}{
		{timeoutErr{}, http.StatusGatewayTimeout, wire.APIStorageTimeout},
		{context.DeadlineExceeded, http.StatusGatewayTimeout, wire.APIStorageTimeout},
		{errRefused, http.StatusServiceUnavailable, wire.APIStorageUnavailable},
	} {
		st.fail.Store(&c.err)
		wantStoreError(t, e.do("GET", path, "", ""), c.status, c.code)
	}
	st.fail.Store(nil)
	if w := e.do("GET", path, "", ""); w.Code != http.StatusOK {
		t.Fatalf("the store back: %d, want 200", w.Code)
	}
}
