package fal_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/fal"
	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

// cdn stands in for fal's CDN; a program uses the guarded fetcher
// (*fetch.Fetcher) instead.
type cdn map[string][]byte

func (c cdn) Fetch(_ context.Context, url string) ([]byte, string, error) {
	return c[url], "image/png", nil
}

// A 16:9 picture from fal-ai/flux/dev through the queue: submit, poll
// until COMPLETED, fetch the result, download the image. A fake queue
// stands in for queue.fal.run, and a clock that records its waits for
// the real one.
func Example() {
	var polls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Println(r.Method, r.URL.Path, strings.HasPrefix(r.Header.Get("Authorization"), "Key "))
		const id = "req-1"
		switch {
		case r.Method == http.MethodPost: // submit
			fmt.Fprintf(w, `{"status":"IN_QUEUE","request_id":%q,"queue_position":0}`, id)
		case strings.HasSuffix(r.URL.Path, "/status") && polls.Add(1) == 1:
			w.WriteHeader(http.StatusAccepted)
			fmt.Fprint(w, `{"status":"IN_PROGRESS"}`)
		case strings.HasSuffix(r.URL.Path, "/status"):
			fmt.Fprint(w, `{"status":"COMPLETED"}`)
		default: // result
			fmt.Fprint(w, `{"images":[{"url":"https://v3.fal.media/files/a.png","width":1024,"height":576}],"has_nsfw_concepts":[false]}`)
		}
	}))
	defer srv.Close()

	clock := providertest.NewInstantClock()
	fmt.Println(providertest.Demo(fal.New, fal.Config{
		Config:  provider.Config{BaseURL: srv.URL, APIKey: "fal-example-key", Clock: clock},
		Fetcher: cdn{"https://v3.fal.media/files/a.png": providertest.PNG(1024, 576)},
	}, providertest.T2I("a lighthouse at dusk", imagegen.Aspect16x9)), clock.Waits())
	// Output:
	// POST /fal-ai/flux/dev true
	// GET /fal-ai/flux/requests/req-1/status true
	// GET /fal-ai/flux/requests/req-1/status true
	// GET /fal-ai/flux/requests/req-1 true
	// fal/fal-ai/flux/dev 1 image/png 1024x576 [1s]
}
