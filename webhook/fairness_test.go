package webhook_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/fetch"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/store/memory"
	"github.com/imagegen/imagegen/webhook"
)

// attemptTimeout is the dispatcher's per-attempt timeout in the fairness
// test: short, so the test is quick; the poster's own timeout is longer.
const attemptTimeout = 300 * time.Millisecond

// TestHangingReceiverDoesNotDelayOthers: eight callbacks to receivers
// that never answer, queued before another user's callback, delay that
// callback by less than one attempt timeout: deliveries run on their own,
// one destination gets at most its share of the slots, and so does one
// owner however many destinations it names.
func TestHangingReceiverDoesNotDelayOthers(t *testing.T) {
	hangingServer := func(t *testing.T) string {
		hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body) // so that the server notices the client leave
			select {                           // hangs until the dispatcher gives up (or 10 s)
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		}))
		t.Cleanup(hang.Close)
		return hang.URL + "/hook"
	}
	t.Run("one destination", func(t *testing.T) {
		url := hangingServer(t)
		victimDelayAfter(t, func(int) string { return url })
	})
	t.Run("one owner, eight destinations", func(t *testing.T) {
		victimDelayAfter(t, func(int) string { return hangingServer(t) })
	})
}

// victimDelayAfter queues eight of mallory's callbacks to hangURL(i),
// then one of another user's, and checks that the dispatcher delivers
// the latter within one attempt timeout.
func victimDelayAfter(t *testing.T, hangURL func(i int) string) {
	is := is.New(t)
	delivered := make(chan time.Time, 1)
	victim := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case delivered <- time.Now():
		default:
		}
	}))
	t.Cleanup(victim.Close)

	svc, err := imagegen.New(imagegen.Config{
		Store: memory.New(memory.Config{}), Model: imagegentest.NewModel(1),
		AllowHTTPCallbacks: true, Logger: slog.New(slog.DiscardHandler),
	})
	is.NoErr(err)
	for _, owner := range []string{"mallory", "victim"} {
		_, err = svc.Grant(ctx, owner, 10, uuid.NewString())
		is.NoErr(err)
	}
	finish := func(owner, url string) {
		_, err := svc.Submit(ctx, owner, imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p", CallbackURL: url})
		is.NoErr(err)
		ran, err := svc.RunOnce(ctx)
		is.NoErr(err)
		is.True(ran)
	}
	for i := range 8 {
		finish("mallory", hangURL(i))
	}
	finish("victim", victim.URL+"/hook")

	poster, err := fetch.New(fetch.Config{AllowPrivate: true, Timeout: 5 * time.Second})
	is.NoErr(err)
	disp, err := webhook.NewDispatcher(fairnessConfig(webhook.Config{
		Service: svc, Poster: poster, Logger: slog.New(slog.DiscardHandler),
		PollInterval: 10 * time.Millisecond,
		Render: func(t *imagegen.Task) ([]byte, error) {
			return json.Marshal(map[string]any{"task_id": t.ID, "status": t.Status})
		},
	}))
	is.NoErr(err)
	runCtx, cancel := context.WithCancel(ctx)
	stopped := make(chan struct{})
	start := time.Now()
	go func() { defer close(stopped); _ = disp.Run(runCtx) }()
	defer func() { cancel(); <-stopped }()
	select {
	case at := <-delivered:
		delay := at.Sub(start)
		t.Logf("the other destination's callback arrived %v after the dispatcher started (attempt timeout %v)", delay.Round(time.Millisecond), attemptTimeout)
		is.True(delay < attemptTimeout)
	case <-time.After(8 * time.Second):
		t.Fatal("the other destination's callback did not arrive within 8 s")
	}
}
