package webhook_test

import (
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
)

// TestSwitchingProtocolsReceiverIsBoundedByTheAttemptTimeout: a receiver
// that answers 101 Switching Protocols and then sends nothing (net/http
// hands the connection over as the answer's body and stops watching the
// context) fails its attempt within AttemptTimeout, which is counted,
// instead of holding the delivery's slot, and its owner's and
// destination's shares, for as long as it keeps the connection open.
func TestSwitchingProtocolsReceiverIsBoundedByTheAttemptTimeout(t *testing.T) {
	is := is.New(t)
	url := testenv.SilentUpgrader(t)

	clock := imagegentest.NewClock(time.Time{})
	store := testenv.Memory(t, memory.Config{Clock: clock})
	svc, err := imagegen.New(imagegen.Config{
		Store: store, Model: imagegentest.NewModel(1), Clock: clock, AllowHTTPCallbacks: true, Logger: quiet,
	})
	is.NoErr(err)
	_, err = svc.Grant(ctx, "mallory", 10, uuid.NewString())
	is.NoErr(err)
	finishTask(t, svc, "mallory", url+"/hook")
	poster, err := fetch.New(fetch.Config{AllowPrivate: true, Timeout: hangTimeout, MinRateGrace: hangTimeout})
	is.NoErr(err)
	disp, err := webhook.NewDispatcher(webhook.Config{
		Service: svc, Store: store, Poster: poster, Clock: clock, Logger: quiet,
		AttemptTimeout: 200 * time.Millisecond, Render: renderStatus,
	})
	is.NoErr(err)

	done := make(chan int, 1)
	go func() {
		n, err := disp.RunOnce(ctx)
		is.NoErr(err)
		done <- n
	}()
	select {
	case n := <-done:
		is.Equal(n, 1)
	case <-time.After(5 * time.Second):
		t.Fatal("the delivery to a receiver that answered 101 still runs after 5s (AttemptTimeout 200ms)")
	}
	// The attempt failed and was counted: the delivery is due again after
	// the backoff, not before.
	got, err := store.ClaimWebhooks(ctx, time.Minute, 10)
	is.NoErr(err)
	is.Equal(len(got), 0)
	clock.Advance(time.Minute)
	got, err = store.ClaimWebhooks(ctx, time.Minute, 10)
	is.NoErr(err)
	is.Equal(len(got), 1)
	is.Equal(got[0].Attempts, 1)
}
