package client_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/imagegen/imagegen/client"
	"github.com/imagegen/imagegen/webhook"
)

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
	header, _ := webhook.Headers(secret, "msg_3f0c", time.Now(), []byte(body))
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
