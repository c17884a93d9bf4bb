// Command barehttp serves the bare net/http baseline (package
// internal/barehttp) that imagegen's HTTP API is compared with under
// wrk: POST /api/v1/generate and GET /api/v1/tasks/{task_id} with one
// API key and one pending task (barehttp.PollTask, which it prints).
// bench/httpratio.sh runs it beside
// `imagegen serve`.
//
//	go run ./barehttp -addr 127.0.0.1:18090 -key bench-key-0123456789abcdef
package main

import (
	"flag"
	"fmt"
	"log"
	"net/http"
	"time"

	"github.com/imagegen/imagegen/internal/barehttp"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18090", "listen address")
	key := flag.String("key", "bench-key-0123456789abcdef", "the one API key")
	flag.Parse()
	h := barehttp.New(*key, "bench")
	fmt.Println(barehttp.PollTask)
	srv := &http.Server{Addr: *addr, Handler: h.Mux("/api/v1"), ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.ListenAndServe())
}
