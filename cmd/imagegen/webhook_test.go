package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/wire"
)

// hookReceiver is a user's callback endpoint: it verifies each call with
// the secret and answers 500 to the first one.
type hookReceiver struct {
	mu     sync.Mutex
	secret string
	calls  []error // Verify's verdict on each call
	bodies []map[string]any
}

func (h *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, wire.Verify(h.secret, r.Header, body, time.Now(), wire.DefaultTolerance))
	var m map[string]any
	_ = json.Unmarshal(body, &m)
	h.bodies = append(h.bodies, m)
	if len(h.calls) == 1 {
		w.WriteHeader(http.StatusInternalServerError)
	}
}

func (h *hookReceiver) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.calls)
}

// A callback whose first delivery fails is retried by another API
// process after the first one is killed: deliveries live in Redis.
func TestWebhookDeliverySurvivesARestart(t *testing.T) {
	is := is.New(t)
	r := startRedis(t)
	key := "webhook-key-0123456789"
	args := []string{"-redis", r.url(), "-demo-key", key, "-allow-private-urls", "-placeholder-delay", "0", "-workers", "1"}
	a, base := startServeProcess(t, args...)

	// The user's secret, as GET /api/v1/webhook-secret gives it (made on
	// first use; here the test makes it through the store the processes share).
	svc := storeService(t, r.client(t), imagegentest.NewModel(1))
	secret, err := svc.WebhookSecret(ctx, "demo-1")
	is.NoErr(err)
	recv := &hookReceiver{secret: secret}
	srv := httptest.NewServer(recv)
	defer srv.Close()

	code, sub := httpCall(t, "POST", base+"/api/v1/generate", key,
		`{"scene":"text-to-image","prompt":"a lighthouse","callback_url":"`+srv.URL+`/hooks"}`)
	is.Equal(code, http.StatusCreated)
	id := sub["task_id"].(string)

	rdb := r.client(t)
	testenv.Eventually(t, 20*time.Second, "the first delivery is answered 500 and its retry recorded", func() bool {
		n, _ := rdb.HGet(ctx, "{imagegen}:task:"+id, "hook_attempts").Int()
		return recv.count() == 1 && n == 1
	})
	a.kill()

	_, _ = startServeProcess(t, args...) // another process picks the retry up
	testenv.Eventually(t, 30*time.Second, "the retry is delivered", func() bool { return recv.count() == 2 })
	recv.mu.Lock()
	defer recv.mu.Unlock()
	for i, verdict := range recv.calls {
		is.NoErr(verdict) // both signed with the user's secret
		is.Equal(recv.bodies[i]["task_id"], id)
		is.Equal(recv.bodies[i]["status"], "success")
		is.Equal(len(recv.bodies[i]["images"].([]any)), 1)
	}
}
