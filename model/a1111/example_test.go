package a1111_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/a1111"
	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

// A 16:9 picture from an SDXL checkpoint on a web UI started with
// --api: one txt2img call, its image in the answer as base64.
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Width, Height int
			Seed          int64
			Override      map[string]string `json:"override_settings"`
		}
		_ = json.NewDecoder(r.Body).Decode(&in)
		fmt.Println(r.URL.Path, in.Width, in.Height, in.Seed, in.Override["sd_model_checkpoint"])
		png := base64.StdEncoding.EncodeToString(providertest.PNG(in.Width, in.Height))
		fmt.Fprintf(w, `{"images":[%q],"parameters":{},"info":"{\"seed\": %d}"}`, png, in.Seed)
	}))
	defer srv.Close()
	req := providertest.T2I("a lighthouse at dusk", imagegen.Aspect16x9)
	seed := int64(42)
	req.Seed = &seed
	fmt.Println(providertest.Demo(a1111.New, a1111.Config{
		Config:     provider.Config{BaseURL: srv.URL},
		Checkpoint: "sd_xl_base_1.0.safetensors",
	}, req))
	// Output:
	// /sdapi/v1/txt2img 1408 792 42 sd_xl_base_1.0.safetensors
	// a1111/sd_xl_base_1.0.safetensors 1 image/png 1408x792
}
