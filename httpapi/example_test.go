package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/httpapi"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/ratelimit"
	"github.com/imagegen/imagegen/store/memory"
)

// The API mounted beside an app's own pages on one mux: a key is made for
// a user, who submits a task with it.
func Example() {
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)
	store, err := memory.New(memory.Config{})
	if err != nil {
		panic(err)
	}
	svc, err := imagegen.New(imagegen.Config{Store: store, Model: imagegentest.NewModel(1), Logger: quiet})
	if err != nil {
		panic(err)
	}
	limiter, err := ratelimit.NewMemory(ratelimit.MemoryConfig{Limit: 10, Window: time.Minute})
	if err != nil {
		panic(err)
	}
	api, err := httpapi.New(httpapi.Config{Service: svc, Limiter: limiter, PublicURL: "https://app.example.com", Logger: quiet})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "the app's home page") })
	api.Register(mux) // everything under /api/v1/

	key, _, err := svc.CreateKey(ctx, "alice") // shown once; only its hash is kept
	if err != nil {
		panic(err)
	}
	if _, err := svc.Grant(ctx, "alice", 10, "signup"); err != nil {
		panic(err)
	}

	req := httptest.NewRequest("POST", "/api/v1/generate", strings.NewReader(`{"scene":"text-to-image","prompt":"a red fox"}`))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, req)

	var sub struct {
		Status           string `json:"status"`
		CreditsUsed      int    `json:"credits_used"`
		CreditsRemaining int    `json:"credits_remaining"`
	}
	if err := json.NewDecoder(rec.Body).Decode(&sub); err != nil {
		panic(err)
	}
	fmt.Println(rec.Code, rec.Header().Get("Content-Type"), rec.Header().Get("RateLimit-Policy"))
	fmt.Println(sub.Status, sub.CreditsUsed, sub.CreditsRemaining)
	// Output:
	// 201 application/json "default";q=10;w=60
	// pending 1 9
}
