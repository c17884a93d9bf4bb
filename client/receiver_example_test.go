package client_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/imagegen/imagegen/client"
	"github.com/imagegen/imagegen/webhook"
)

// addReceiver is the README's callback receiver snippet: it fetches the
// user's webhook secret once and mounts a handler that trusts a callback
// only once it verifies.
func addReceiver(ctx context.Context, c *client.Client, mux *http.ServeMux, handle func(*client.Task)) error {
	secret, err := c.WebhookSecret(ctx) // once; keep it with the receiver, like an API key
	if err != nil {
		return err
	}
	v := client.WebhookVerifier{Secret: secret}
	mux.HandleFunc("POST /hooks/imagegen", func(w http.ResponseWriter, r *http.Request) {
		task, err := v.Receive(r) // checks webhook-signature and webhook-timestamp (±5 min)
		if err != nil {           // errors.Is(err, client.ErrWebhookSignature), ErrWebhookTimestamp, …
			http.Error(w, "bad callback", http.StatusBadRequest)
			return
		}
		handle(task) // a delivery can repeat after a retry: handle each task.TaskID once
		w.WriteHeader(http.StatusNoContent)
	})
	return nil
}

// A callback receiver in an app, fed a delivery signed as the server
// signs it, then a forged one.
func ExampleClient_WebhookSecret() {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	srv, base, closeServer, err := exampleServer(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer closeServer()
	key, _, _ := srv.Service().CreateKey(ctx, "alice")
	c, err := client.New(base, key)
	if err != nil {
		fmt.Println(err)
		return
	}

	app := http.NewServeMux()
	err = addReceiver(ctx, c, app, func(t *client.Task) { fmt.Println("handled", t.TaskID, t.Status) })
	if err != nil {
		fmt.Println(err)
		return
	}
	secret, _ := srv.Service().WebhookSecret(ctx, "alice")
	body := `{"task_id":"3f0c","status":"success","images":["https://img.example.com/a.png"]}`
	for _, s := range []string{secret, "whsec_" + strings.Repeat("A", 44)} { // the real secret, a forger's
		header, _ := webhook.Headers(s, "msg_3f0c", time.Now(), []byte(body))
		r := httptest.NewRequest(http.MethodPost, "/hooks/imagegen", strings.NewReader(body))
		r.Header = header
		w := httptest.NewRecorder()
		app.ServeHTTP(w, r)
		fmt.Println(w.Code)
	}
	// Output:
	// handled 3f0c success
	// 204
	// 400
}
