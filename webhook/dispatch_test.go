package webhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/fetch"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/store/memory"
	"github.com/imagegen/imagegen/webhook"
	"github.com/imagegen/imagegen/wire"
)

var ctx = context.Background()

// quiet keeps the service's and the dispatcher's logs out of test output.
var quiet = slog.New(slog.DiscardHandler)

// renderStatus is the tests' callback body: the task's id and status.
func renderStatus(t *imagegen.Task) ([]byte, error) {
	return json.Marshal(map[string]any{"task_id": t.ID, "status": t.Status})
}

// receiver is the user's endpoint: it verifies every call and answers
// with the scripted statuses (then 200).
type receiver struct {
	t       *testing.T
	secret  func() string
	clock   *imagegentest.Clock
	mu      sync.Mutex
	answers []int
	calls   []call
}

type call struct {
	id       string
	event    string
	verified error
	body     []byte
	header   http.Header
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	err := wire.Verify(rc.secret(), r.Header, body, rc.clock.Now(), wire.DefaultTolerance)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.calls = append(rc.calls, call{id: r.Header.Get(wire.HeaderID), event: r.Header.Get(wire.HeaderEvent), verified: err, body: body, header: r.Header.Clone()})
	status := http.StatusOK
	if len(rc.answers) > 0 {
		status, rc.answers = rc.answers[0], rc.answers[1:]
	}
	if status == http.StatusFound {
		http.Redirect(w, r, "/elsewhere", status)
		return
	}
	w.WriteHeader(status)
}

func (rc *receiver) got() []call {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]call(nil), rc.calls...)
}

type fixture struct {
	svc   *imagegen.Service
	store imagegen.Store // the service's
	clock *imagegentest.Clock
	recv  *receiver
	url   string
	disp  *webhook.Dispatcher
}

func newFixture(t *testing.T, allowPrivate bool, answers ...int) *fixture {
	return newFixtureOn(t, allowPrivate, func(s imagegen.Store) imagegen.Store { return s }, answers...)
}

// newFixtureOn is newFixture with the service's store wrapped by wrap.
func newFixtureOn(t *testing.T, allowPrivate bool, wrap func(imagegen.Store) imagegen.Store, answers ...int) *fixture {
	is := is.New(t)
	clock := imagegentest.NewClock(time.Time{})
	store := wrap(testenv.Memory(t, memory.Config{Clock: clock}))
	svc, err := imagegen.New(imagegen.Config{
		Store: store, Model: imagegentest.NewModel(1), Clock: clock,
		AllowHTTPCallbacks: true, Logger: quiet,
	})
	is.NoErr(err)
	f := &fixture{svc: svc, store: store, clock: clock}
	f.recv = &receiver{t: t, clock: clock, answers: answers, secret: func() string {
		s, err := svc.WebhookSecret(ctx, "u")
		is.NoErr(err)
		return s
	}}
	srv := httptest.NewServer(f.recv)
	t.Cleanup(srv.Close)
	f.url = srv.URL + "/hooks"
	poster, err := fetch.New(fetch.Config{AllowPrivate: allowPrivate})
	is.NoErr(err)
	f.disp, err = webhook.NewDispatcher(webhook.Config{
		Service: svc, Store: store, Poster: poster, Clock: clock, Logger: quiet, MaxAttempts: 3,
		Render: renderStatus,
	})
	is.NoErr(err)
	_, err = svc.Grant(ctx, "u", 10, uuid.NewString())
	is.NoErr(err)
	return f
}

func (f *fixture) finishedTask(t *testing.T) string {
	return finishTask(t, f.svc, "u", f.url)
}

// finishTask submits owner's task with callbackURL and runs it to the
// end, which queues its callback; it returns the task's id.
func finishTask(t *testing.T, svc *imagegen.Service, owner, callbackURL string) string {
	is := is.New(t)
	sub, err := svc.Submit(ctx, owner, imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p", CallbackURL: callbackURL})
	is.NoErr(err)
	ran, err := svc.RunOnce(ctx)
	is.NoErr(err)
	is.True(ran)
	return sub.TaskID
}

func TestDeliveryIsSignedAndRetriedAfterA500(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, true, http.StatusInternalServerError)
	id := f.finishedTask(t)

	n, err := f.disp.RunOnce(ctx)
	is.NoErr(err)
	is.Equal(n, 1) // answered 500
	n, err = f.disp.RunOnce(ctx)
	is.NoErr(err)
	is.Equal(n, 0) // not before its backoff
	f.clock.Advance(5 * time.Second)
	n, err = f.disp.RunOnce(ctx)
	is.NoErr(err)
	is.Equal(n, 1) // answered 200
	f.clock.Advance(time.Hour)
	n, err = f.disp.RunOnce(ctx)
	is.NoErr(err)
	is.Equal(n, 0) // delivered: never again

	calls := f.recv.got()
	is.Equal(len(calls), 2)
	for _, c := range calls {
		is.NoErr(c.verified)      // signed with the user's secret
		is.Equal(c.id, "msg_"+id) // the same id on the retry, for deduplication
		is.Equal(c.event, "completed")
		var body map[string]any
		is.NoErr(json.Unmarshal(c.body, &body))
		is.Equal(body["task_id"], id)
		is.Equal(body["status"], "success")
	}
	// A tampered body fails verification.
	secret, err := f.svc.WebhookSecret(ctx, "u")
	is.NoErr(err)
	h, err := wire.Headers(secret, "msg_"+id, f.clock.Now(), calls[1].body)
	is.NoErr(err)
	is.Equal(wire.Verify(secret, h, append(calls[1].body, ' '), f.clock.Now(), wire.DefaultTolerance), wire.ErrInvalidSignature)
}

func TestRedirectsAreNotFollowedAndDeliveryGivesUp(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, true, http.StatusFound, http.StatusFound, http.StatusFound, http.StatusFound)
	f.finishedTask(t)
	for range 3 {
		n, err := f.disp.RunOnce(ctx)
		is.NoErr(err)
		is.Equal(n, 1)
		f.clock.Advance(time.Hour)
	}
	n, err := f.disp.RunOnce(ctx)
	is.NoErr(err)
	is.Equal(n, 0)                 // given up after MaxAttempts (3)
	is.Equal(len(f.recv.got()), 3) // /elsewhere was never called
}

func TestDeliveriesGoThroughTheSSRFGuard(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, false) // the receiver is on loopback: refused
	f.finishedTask(t)
	n, err := f.disp.RunOnce(ctx)
	is.NoErr(err)
	is.Equal(n, 1)
	is.Equal(len(f.recv.got()), 0) // never connected
}

func TestTaskWithoutCallbackSendsNothing(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, true)
	_, err := f.svc.Submit(ctx, "u", imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p"})
	is.NoErr(err)
	_, err = f.svc.RunOnce(ctx)
	is.NoErr(err)
	n, err := f.disp.RunOnce(ctx)
	is.NoErr(err)
	is.Equal(n, 0)
}

func TestCallbackMustBeHTTPSByDefault(t *testing.T) {
	is := is.New(t)
	svc, err := imagegen.New(imagegen.Config{Store: testenv.Memory(t, memory.Config{}), Model: imagegentest.NewModel(1), Logger: quiet})
	is.NoErr(err)
	_, err = svc.Grant(ctx, "u", 1, uuid.NewString())
	is.NoErr(err)
	_, err = svc.Submit(ctx, "u", imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p", CallbackURL: "http://app.example.com/hook"})
	var ve *imagegen.ValidationError
	is.True(errors.As(err, &ve))
	is.Equal(ve.Field, "callback_url")
	bal, err := svc.Balance(ctx, "u")
	is.NoErr(err)
	is.Equal(bal, int64(1)) // nothing charged
}

func TestCallbackEvents(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, true)
	sub, err := f.svc.Submit(ctx, "u", imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p", CallbackURL: f.url,
		CallbackEvents: []imagegen.CallbackEvent{imagegen.EventProcessing, imagegen.EventCompleted}})
	is.NoErr(err)
	only, err := f.svc.Submit(ctx, "u", imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p", CallbackURL: f.url,
		CallbackEvents: []imagegen.CallbackEvent{imagegen.EventProcessing}})
	is.NoErr(err)
	for range 2 {
		ran, err := f.svc.RunOnce(ctx)
		is.NoErr(err)
		is.True(ran)
	}
	for {
		n, err := f.disp.RunOnce(ctx)
		is.NoErr(err)
		if n == 0 {
			break
		}
	}
	got := map[string]string{} // webhook-id -> event
	for _, c := range f.recv.got() {
		is.NoErr(c.verified)
		got[c.id] = c.event
	}
	is.Equal(got, map[string]string{
		"msg_" + sub.TaskID + "_processing":  "processing",
		"msg_" + sub.TaskID:                  "completed",
		"msg_" + only.TaskID + "_processing": "processing", // and no completed one
	})
}

// hangTimeout is the dispatcher's per-attempt timeout (and the poster's)
// in the fairness test: far longer than the test, so that no hanging
// delivery ends while it runs.
const hangTimeout = time.Hour

// TestHangingReceiverDoesNotDelayOthers: eight callbacks to receivers
// that never answer, queued before another user's callback, do not hold
// that callback up: it is delivered while every hanging delivery is still
// in flight (none ends before the test releases them), since deliveries
// run on their own, one destination gets at most its share of the slots,
// and so does one owner however many destinations it names.
func TestHangingReceiverDoesNotDelayOthers(t *testing.T) {
	t.Run("one destination", func(t *testing.T) {
		h := newHanging()
		url := h.server(t)
		victimDeliveredBeside(t, h, func(int) string { return url })
	})
	t.Run("one owner, eight destinations", func(t *testing.T) {
		h := newHanging()
		victimDeliveredBeside(t, h, func(int) string { return h.server(t) })
	})
}

// hanging is a set of receivers that answer no delivery until the test
// ends (or the dispatcher gives up on it), and count the deliveries they
// received and those that ended.
type hanging struct {
	release         chan struct{}
	releaseAll      func() // closes release, once
	received, ended atomic.Int64
}

func newHanging() *hanging {
	release := make(chan struct{})
	return &hanging{release: release, releaseAll: sync.OnceFunc(func() { close(release) })}
}

// server starts one hanging receiver and returns its callback URL. Its
// deliveries are released when the test ends, before it closes.
func (h *hanging) server(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.received.Add(1)
		defer h.ended.Add(1)
		_, _ = io.Copy(io.Discard, r.Body) // so that the server notices the client leave
		select {
		case <-h.release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(h.releaseAll) // runs first
	return srv.URL + "/hook"
}

// victimDeliveredBeside queues eight of mallory's callbacks to
// hangURL(i), then one of another user's, and checks that the dispatcher
// delivers the latter while none of the former has ended.
func victimDeliveredBeside(t *testing.T, h *hanging, hangURL func(i int) string) {
	is := is.New(t)
	endedAtVictim := make(chan int64, 1)
	victim := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case endedAtVictim <- h.ended.Load():
		default:
		}
	}))
	t.Cleanup(victim.Close)

	store := testenv.Memory(t, memory.Config{})
	svc, err := imagegen.New(imagegen.Config{
		Store: store, Model: imagegentest.NewModel(1),
		AllowHTTPCallbacks: true, Logger: quiet,
	})
	is.NoErr(err)
	for _, owner := range []string{"mallory", "victim"} {
		_, err = svc.Grant(ctx, owner, 10, uuid.NewString())
		is.NoErr(err)
	}
	for i := range 8 {
		finishTask(t, svc, "mallory", hangURL(i))
	}
	finishTask(t, svc, "victim", victim.URL+"/hook")

	poster, err := fetch.New(fetch.Config{AllowPrivate: true, Timeout: hangTimeout, MinRateGrace: hangTimeout})
	is.NoErr(err)
	disp, err := webhook.NewDispatcher(webhook.Config{
		Service: svc, Store: store, Poster: poster, Logger: quiet,
		PollInterval: 10 * time.Millisecond, AttemptTimeout: hangTimeout,
		Render: renderStatus,
	})
	is.NoErr(err)
	runCtx, cancel := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() { defer close(stopped); _ = disp.Run(runCtx) }()
	defer func() { cancel(); <-stopped }()
	select {
	case ended := <-endedAtVictim:
		is.Equal(ended, int64(0)) // every hanging delivery was still in flight
	case <-time.After(time.Minute): // a safety bound: unfairly, it would never come
		t.Fatal("the other user's callback was not delivered beside the hanging ones")
	}
}
