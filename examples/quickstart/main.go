// Command quickstart is the smallest whole program that embeds imagegen:
// the API, its workers and one user with credits, in your own process,
// with everything kept in memory. The README's "Embed it in your app"
// section quotes this file as it is.
//
//	go run ./examples/quickstart        # prints the URL and an API key
//	curl -s -X POST http://127.0.0.1:8080/api/v1/generate -H "Authorization: Bearer $KEY" \
//	     -H 'Content-Type: application/json' -d '{"scene":"text-to-image","prompt":"a red fox"}'
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/fetch"
	"github.com/imagegen/imagegen/model/placeholder"
	"github.com/imagegen/imagegen/server"
	"github.com/imagegen/imagegen/store/memory"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "address to listen on")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	// A local model that draws a PNG; a provider (model/openai, ...) goes here in production.
	fetcher, err := fetch.New(fetch.Config{}) // the guarded fetcher for image_input URLs
	if err != nil {
		log.Fatal(err)
	}
	model, err := placeholder.New(placeholder.Config{Fetcher: fetcher})
	if err != nil {
		log.Fatal(err)
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	store, err := memory.New(memory.Config{Retention: 24 * time.Hour})
	if err != nil {
		log.Fatal(err)
	}
	srv, err := server.New(ctx, server.Config{
		Service:   imagegen.Config{Store: store, Model: model, ImageInputGuard: fetcher},
		PublicURL: base, // image URLs start with it
	})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux() // your app's own pages stay on it
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "home") })
	srv.Register(mux) // the API under /api/v1/, /healthz and /readyz
	go srv.Run(ctx)   // workers and callback deliveries, until ctx ends

	svc := srv.Service()
	key, _, err := svc.CreateKey(ctx, "user-42") // shown once; only its SHA-256 is kept
	if err != nil {
		log.Fatal(err)
	}
	if _, err := svc.Grant(ctx, "user-42", 100, "signup"); err != nil { // once per reference
		log.Fatal(err)
	}
	fmt.Println("API:", base+"/api/v1")
	fmt.Println("key:", key)

	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { <-ctx.Done(); _ = hs.Shutdown(context.Background()) }()
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}
