package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
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

// lateCreateStore answers CreateTask as a store whose create got no
// reply does (the error wraps imagegen.ErrOutcomeUnknown: its command
// may still run), and makes the task, charged, only after the first
// CancelTask has looked for it: the create landed late. Each CancelTask
// is reported on cancels once it has returned.
type lateCreateStore struct {
	*memory.Store
	cancels chan struct{}
	never   bool // the create never lands
	mu      sync.Mutex
	land    func() // the create not landed yet; nil once it has
}

func newLateCreateStore(t *testing.T) *lateCreateStore {
	return &lateCreateStore{Store: testenv.Memory(t, memory.Config{Clock: imagegentest.NewClock(time.Time{}), Retention: retention}), cancels: make(chan struct{}, 16)}
}

func (s *lateCreateStore) CreateTask(_ context.Context, t *imagegen.Task, p imagegen.CreateParams) (int64, error) {
	task := *t
	if s.never {
		return 0, fmt.Errorf("no reply (the command may still run): %w", imagegen.ErrOutcomeUnknown)
	}
	s.mu.Lock()
	s.land = func() { _, _ = s.Store.CreateTask(context.Background(), &task, p) }
	s.mu.Unlock()
	return 0, fmt.Errorf("no reply (the command may still run): %w", imagegen.ErrOutcomeUnknown)
}

func (s *lateCreateStore) CancelTask(ctx context.Context, owner, id string, p imagegen.CancelParams) (int64, error) {
	refund, err := s.Store.CancelTask(ctx, owner, id, p)
	s.mu.Lock()
	if s.land != nil {
		s.land()
		s.land = nil
	}
	s.mu.Unlock()
	s.cancels <- struct{}{}
	return refund, err
}

// submitLost sends a generation to an OpenAI endpoint on store, whose
// submit store loses (answered 500), and waits for the endpoint's first
// cancel of its task; it returns the endpoint and how many waited on its
// clock before.
func submitLost(t *testing.T, store *lateCreateStore) (o *openAIEnv, before int) {
	t.Helper()
	o = newOpenAIEnv(t, 1000)
	o.env = newEnv(t, func(opt *envOptions) {
		opt.openAI, opt.store = true, store
		opt.api = func(c *httpapi.Config) { c.OpenAIWait = 30 * time.Second }
	})
	before = o.clock.Waiters()
	w := o.do("POST", "/v1/images/generations", o.key, `{"prompt":"otter"}`)
	o.errorShape(t, w, http.StatusInternalServerError, "server_error", "", "")
	<-store.cancels
	return o, before
}

// A lost submit whose store cannot tell whether its create will still
// land: the first cancel finds no task, then the create lands, charged.
// The endpoint keeps cancelling on the clock, so that task is cancelled
// and refunded rather than run for nobody while the SDK's retry
// charges again.
func TestOpenAISubmitThatLandsLateIsCancelledAndRefunded(t *testing.T) {
	is := is.New(t)
	store := newLateCreateStore(t)
	o, before := submitLost(t, store) // the first cancel found nothing; then the create landed
	is.True(o.credits() < 10)         // charged for a task nobody waits for
	testenv.Eventually(t, 5*time.Second, "a cancel to wait on the clock", func() bool { return o.clock.Waiters() > before })
	o.clock.Advance(time.Second)
	<-store.cancels
	is.Equal(o.credits(), int64(10)) // refunded
	var list wire.TaskList
	is.NoErr(json.Unmarshal(o.do("GET", "/api/v1/tasks", o.key, "").Body.Bytes(), &list))
	is.Equal(len(list.Tasks), 1)
	is.Equal(list.Tasks[0].Status, imagegen.StatusFailed)
	is.Equal(list.Tasks[0].ErrorCode, imagegen.CodeCancelled)
	testenv.Eventually(t, 5*time.Second, "the cancelling to stop", func() bool { return o.clock.Waiters() == before })
}

// When the create never lands, the cancelling stops by itself: eight
// more cancels, one second after the first and each wait twice the one
// before, then nothing waits on the clock any more.
func TestOpenAISubmitThatNeverLandsStopsCancelling(t *testing.T) {
	is := is.New(t)
	store := newLateCreateStore(t)
	store.never = true
	o, before := submitLost(t, store)
	for wait := time.Second; wait <= 128*time.Second; wait *= 2 {
		testenv.Eventually(t, 5*time.Second, "a cancel to wait on the clock", func() bool { return o.clock.Waiters() > before })
		o.clock.Advance(wait)
		<-store.cancels
	}
	testenv.Eventually(t, 5*time.Second, "the cancelling to stop", func() bool { return o.clock.Waiters() == before })
	is.Equal(len(store.cancels), 0)  // no cancel more
	is.Equal(o.credits(), int64(10)) // never charged
}
