package server_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/fetch"
	"github.com/imagegen/imagegen/model/placeholder"
	"github.com/imagegen/imagegen/server"
	"github.com/imagegen/imagegen/store/memory"
)

// The whole stack in one call, mounted beside the app's own pages.
func Example() {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()

	fetcher, err := fetch.New(fetch.Config{}) // the guarded fetcher for image_input URLs
	if err != nil {
		log.Fatal(err)
	}
	model, err := placeholder.New(placeholder.Config{Fetcher: fetcher, LongSide: 64})
	if err != nil {
		log.Fatal(err)
	}
	store, err := memory.New(memory.Config{Retention: 24 * time.Hour})
	if err != nil {
		log.Fatal(err)
	}
	srv, err := server.New(ctx, server.Config{
		Service:   imagegen.Config{Store: store, Model: model, ImageInputGuard: fetcher},
		PublicURL: "https://app.example.com", // image URLs start with it
	})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "home") }) // your pages stay
	srv.Register(mux)                                                                                    // the API under /api/v1/, /healthz and /readyz
	go srv.Run(ctx)                                                                                      // workers and callback deliveries, until ctx ends

	svc := srv.Service()
	key, _, err := svc.CreateKey(ctx, "user-42") // shown once; only its SHA-256 is kept
	if err != nil {
		log.Fatal(err)
	}
	if _, err := svc.Grant(ctx, "user-42", 100, "signup"); err != nil { // once per reference
		log.Fatal(err)
	}
	left, err := svc.ChargeWeb(ctx, "user-42", 1, "order-981") // web use, same balance
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("credits left:", left.Balance)

	r := httptest.NewRequest("POST", "/api/v1/generate", strings.NewReader(`{"scene":"text-to-image","prompt":"a red fox"}`))
	r.Header.Set("Authorization", "Bearer "+key)
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, r)
	fmt.Println(w.Code)
	// Output:
	// credits left: 99
	// 201
}
