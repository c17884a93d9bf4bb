package webhook_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
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

// TestRequeuedTaskSendsItsNewEnding: a task fails and its callback is
// held up at the receiver; meanwhile an operator retries the task, which
// succeeds and queues its callback again under the same webhook-id. When
// the old attempt is answered, its ack must not remove the new delivery:
// the receiver's last word on the task is that it succeeded.
func TestRequeuedTaskSendsItsNewEnding(t *testing.T) {
	is := is.New(t)
	type got struct{ id, status string }
	var (
		mu       sync.Mutex
		received []got
		arrived  = make(chan struct{})
		release  = make(chan struct{})
		first    sync.Once
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var b struct {
			Status string `json:"status"`
		}
		_ = json.Unmarshal(body, &b)
		mu.Lock()
		received = append(received, got{r.Header.Get(wire.HeaderID), b.Status})
		mu.Unlock()
		first.Do(func() { // the first call is answered once the test says so
			close(arrived)
			<-release
		})
	}))
	t.Cleanup(srv.Close)

	clock := imagegentest.NewClock(time.Time{})
	store := testenv.Memory(t, memory.Config{Clock: clock})
	model := imagegentest.NewModel(1, imagegentest.Fail(&imagegen.ModelError{Provider: "p", Message: "broken"}), imagegentest.Succeed())
	svc, err := imagegen.New(imagegen.Config{Store: store, Model: model, Clock: clock, AllowHTTPCallbacks: true, Logger: quiet})
	is.NoErr(err)
	_, err = svc.Grant(ctx, "u", 10, uuid.NewString())
	is.NoErr(err)
	poster, err := fetch.New(fetch.Config{AllowPrivate: true})
	is.NoErr(err)
	disp, err := webhook.NewDispatcher(webhook.Config{
		Service: svc, Store: store, Poster: poster, Clock: clock, Logger: quiet, Render: renderStatus,
	})
	is.NoErr(err)

	id := finishTask(t, svc, "u", srv.URL+"/hook")
	task, err := svc.Task(ctx, "u", id)
	is.NoErr(err)
	is.Equal(task.Status, imagegen.StatusFailed)

	// The failure's callback reaches the receiver, which holds it.
	firstRun := make(chan int, 1)
	go func() {
		n, err := disp.RunOnce(ctx)
		is.NoErr(err)
		firstRun <- n
	}()
	<-arrived

	// Meanwhile the operator retries the task, and it succeeds.
	clock.Advance(time.Second)
	is.NoErr(svc.Inspector().Retry(ctx, id, false, "the provider is back"))
	ran, err := svc.RunOnce(ctx)
	is.NoErr(err)
	is.True(ran)
	task, err = svc.Task(ctx, "u", id)
	is.NoErr(err)
	is.Equal(task.Status, imagegen.StatusSuccess)

	// The old attempt is answered 200 and acked; the success's callback
	// is still to send, and goes.
	close(release)
	is.Equal(<-firstRun, 1)
	n, err := disp.RunOnce(ctx)
	is.NoErr(err)
	is.Equal(n, 1)

	mu.Lock()
	defer mu.Unlock()
	is.Equal(received, []got{{"msg_" + id, "failed"}, {"msg_" + id, "success"}})
}
