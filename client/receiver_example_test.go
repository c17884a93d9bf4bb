package client_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/imagegen/imagegen/client"
	"github.com/imagegen/imagegen/wire"
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
		handle(task) // may come again (a retry, or a requeued task's new ending): keep the latest FinishedAt
		w.WriteHeader(http.StatusNoContent)
	})
	return nil
}

// A callback receiver in an app, fed a delivery signed as the server
// signs it, then a forged one.
func ExampleClient_WebhookSecret() {
	srv, base, key, stop, err := exampleServer(0)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()
	ctx := context.Background()
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
		header, _ := wire.Headers(s, "msg_3f0c", time.Now(), []byte(body))
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

// A receiver of callbacks: it trusts a callback only once it verifies,
// answers 2xx once the task is handled (or a retry comes), and 400 to a
// callback that does not verify.
func ExampleWebhookVerifier_Receive() {
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" // from Client.WebhookSecret, kept with the receiver
	v := client.WebhookVerifier{Secret: secret}
	receive := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		task, err := v.Receive(r)
		if err != nil {
			http.Error(w, "bad callback", http.StatusBadRequest)
			fmt.Println("refused:", err)
			return
		}
		fmt.Println("task", task.TaskID, "ended", task.Status, "with", len(task.Images), "image")
		w.WriteHeader(http.StatusNoContent)
	})

	// What the server sends, and a copy with its body tampered with.
	body := `{"task_id":"3f0c","status":"success","images":["https://img.example.com/a.png"]}`
	header, _ := wire.Headers(secret, "msg_3f0c", time.Now(), []byte(body))
	for _, b := range []string{body, strings.Replace(body, "a.png", "evil.png", 1)} {
		r := httptest.NewRequest(http.MethodPost, "/hooks/imagegen", strings.NewReader(b))
		r.Header = header.Clone()
		w := httptest.NewRecorder()
		receive(w, r)
		fmt.Println(w.Code)
	}
	// Output:
	// task 3f0c ended success with 1 image
	// 204
	// refused: client: verify callback: webhook: no valid signature
	// 400
}
