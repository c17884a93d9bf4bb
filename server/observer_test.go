package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/server"
	"github.com/imagegen/imagegen/store/memory"
)

// observed is an Observer that passes on the API answers and callback
// deliveries it is told of.
type observed struct {
	imagegen.NopObserver
	requests   chan string
	deliveries chan string
}

func (o *observed) HTTPRequest(route string, code int, _ time.Duration) {
	o.requests <- route + " " + http.StatusText(code)
}

func (o *observed) WebhookDelivery(outcome string) { o.deliveries <- outcome }

// The service's Observer is the API's and the dispatcher's too: one
// observer, given once, sees the whole stack.
func TestTheServicesObserverSeesTheAPIAndCallbacks(t *testing.T) {
	is := is.New(t)
	obs := &observed{requests: make(chan string, 10), deliveries: make(chan string, 10)}
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer receiver.Close()
	cfg := config(testenv.Memory(t, memory.Config{}))
	cfg.Service.Observer = obs
	cfg.Service.AllowHTTPCallbacks = true // the receiver is on loopback
	cfg.Service.Clock = imagegen.SystemClock{}
	srv, err := server.New(ctx, cfg)
	is.NoErr(err)

	key, _, err := srv.Service().CreateKey(ctx, "alice")
	is.NoErr(err)
	is.Equal(do(t, srv, "GET", "/api/v1/credits", key, "").Code, http.StatusOK)
	is.Equal(<-obs.requests, "GET /api/v1/credits OK")

	_, err = srv.Service().Grant(ctx, "alice", 5, "signup")
	is.NoErr(err)
	_, err = srv.Service().Submit(ctx, "alice", imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "a kite", CallbackURL: receiver.URL})
	is.NoErr(err)
	runCtx, stop := context.WithTimeout(ctx, time.Minute)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- srv.Run(runCtx) }()
	select {
	case outcome := <-obs.deliveries:
		is.Equal(outcome, "delivered")
	case <-runCtx.Done():
		t.Fatal("no callback delivery was observed within a minute")
	}
	stop()
	is.NoErr(<-done)
}
