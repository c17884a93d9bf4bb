package webhook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/fetch"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/store/memory"
	"github.com/imagegen/imagegen/webhook"
	"github.com/imagegen/imagegen/wire"
)

// A dispatcher delivers a finished task's callback, signed; the receiver
// checks the signature with wire.Verify before it trusts the body.
// (server.New wires the dispatcher with the API's task rendering.)
func Example() {
	ctx, stop := context.WithTimeout(context.Background(), time.Minute)
	defer stop()
	quiet := slog.New(slog.DiscardHandler)
	store, err := memory.New(memory.Config{})
	if err != nil {
		log.Fatal(err)
	}
	svc, err := imagegen.New(imagegen.Config{Store: store, Model: imagegentest.NewModel(1), Logger: quiet,
		AllowHTTPCallbacks: true}) // the receiver below is on loopback
	if err != nil {
		log.Fatal(err)
	}

	got := make(chan string, 1)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		secret, _ := svc.WebhookSecret(r.Context(), "alice") // the receiver's copy of alice's secret
		err := wire.Verify(secret, r.Header, body, time.Now(), wire.DefaultTolerance)
		got <- fmt.Sprintf("%s %s verified: %v", r.Header.Get(wire.HeaderEvent), body, err == nil)
	}))
	defer receiver.Close()

	poster, err := fetch.New(fetch.Config{AllowPrivate: true}) // the guarded sender
	if err != nil {
		log.Fatal(err)
	}
	disp, err := webhook.NewDispatcher(webhook.Config{
		Service: svc, Store: store, Poster: poster, Logger: quiet, PollInterval: 10 * time.Millisecond,
		Render: func(t *imagegen.Task) ([]byte, error) {
			return json.Marshal(map[string]string{"task_id": "t", "status": string(t.Status)})
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := svc.Grant(ctx, "alice", 1, "signup"); err != nil {
		log.Fatal(err)
	}
	req := imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "a kite", CallbackURL: receiver.URL}
	if _, err := svc.Submit(ctx, "alice", req); err != nil {
		log.Fatal(err)
	}
	if _, err := svc.RunOnce(ctx); err != nil { // a worker would do this
		log.Fatal(err)
	}
	go func() { _ = disp.Run(ctx) }()
	select {
	case delivery := <-got:
		fmt.Println(delivery)
	case <-ctx.Done():
		fmt.Println("no delivery within a minute")
	}
	// Output:
	// completed {"status":"success","task_id":"t"} verified: true
}
