package bfl_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/bfl"
	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

// A 3:2 picture from flux-pro-1.1: the submit answers a polling_url,
// the adapter reads it until the task is Ready and downloads
// result.sample through the Fetcher. A fake API stands in for
// api.bfl.ai, and a scripted fetcher for BFL's delivery host.
func Example() {
	const sample = "https://delivery-eu1.bfl.ai/results/abc/sample.png?sig=x"
	reads := 0
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			var in map[string]any
			_ = json.NewDecoder(r.Body).Decode(&in)
			fmt.Println(r.Method, r.URL.Path, in["width"], in["height"])
			fmt.Fprintf(w, `{"id":"abc","polling_url":%q}`, srv.URL+"/v1/get_result?id=abc")
			return
		}
		reads++
		status := map[int]string{1: "Pending", 2: "Ready"}[reads]
		fmt.Println(r.Method, r.URL.Path, "→", status)
		fmt.Fprintf(w, `{"id":"abc","status":%q,"result":{"sample":%q}}`, status, sample)
	}))
	defer srv.Close()
	fmt.Println(providertest.Demo(bfl.New, bfl.Config{
		Config:  provider.Config{BaseURL: srv.URL, APIKey: "bfl-example", Clock: providertest.NewInstantClock()},
		Fetcher: &providertest.Fetcher{Images: map[string]providertest.Image{sample: {Data: providertest.PNG(1248, 832)}}},
	}, providertest.T2I("a red panda in a bamboo forest", imagegen.Aspect3x2)))
	// Output:
	// POST /v1/flux-pro-1.1 1248 832
	// GET /v1/get_result → Pending
	// GET /v1/get_result → Ready
	// bfl/flux-pro-1.1 2 image/png 1248x832
}
