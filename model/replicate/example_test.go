package replicate_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
	"github.com/imagegen/imagegen/model/replicate"
)

// A 16:9 picture from flux-kontext-pro: the create call comes back
// still starting, the adapter polls urls.get until the prediction
// succeeds, downloads its output through the Fetcher and crops the
// 1392x752 answer to exactly 16:9. A fake API stands in for
// api.replicate.com, and a scripted fetcher for replicate.delivery.
func Example() {
	const output = "https://replicate.delivery/xezq/abc123/out-0.png"
	reads := 0
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		status := "starting"
		if r.Method == http.MethodPost {
			var body struct{ Input map[string]any }
			_ = json.NewDecoder(r.Body).Decode(&body)
			fmt.Println(r.Method, r.URL.Path, r.Header.Get("Prefer"), body.Input["aspect_ratio"])
		} else {
			reads++
			status = map[int]string{1: "processing", 2: "succeeded"}[reads]
			fmt.Println(r.Method, r.URL.Path, "→", status)
		}
		out := "null"
		if status == "succeeded" {
			out = fmt.Sprintf("%q", output)
		}
		get := srv.URL + "/v1/predictions/gm3qorzdhgbfurvjtvhg6dckhu"
		fmt.Fprintf(w, `{"id":"gm3qorzdhgbfurvjtvhg6dckhu","status":%q,"output":%s,"error":null,"urls":{"get":%q,"cancel":%q}}`, status, out, get, get+"/cancel")
	}))
	defer srv.Close()

	fmt.Println(providertest.Demo(replicate.New, replicate.Config{
		Config:  provider.Config{BaseURL: srv.URL + "/v1", APIKey: "r8_example", Clock: providertest.NewInstantClock()},
		Fetcher: &providertest.Fetcher{Images: map[string]providertest.Image{output: {Data: providertest.PNG(1392, 752)}}},
	}, providertest.T2I("a red panda in a bamboo forest", imagegen.Aspect16x9)))
	// Output:
	// POST /v1/models/black-forest-labs/flux-kontext-pro/predictions wait=60 16:9
	// GET /v1/predictions/gm3qorzdhgbfurvjtvhg6dckhu → processing
	// GET /v1/predictions/gm3qorzdhgbfurvjtvhg6dckhu → succeeded
	// replicate/black-forest-labs/flux-kontext-pro 2 image/png 1328x747
}
