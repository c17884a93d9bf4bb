package openai_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/openai"
	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

// A 16:9 picture from gpt-image-1: the adapter asks for 1536x1024, the
// nearest size the model has, and centre-crops the answer to 1536x864.
// A fake Images API stands in for api.openai.com.
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Model, Prompt, Size string }
		_ = json.NewDecoder(r.Body).Decode(&req)
		fmt.Println("POST", r.URL.Path, req.Model, req.Size)
		fmt.Fprintf(w, `{"created":1713833628,"data":[{"b64_json":%q}]}`, base64.StdEncoding.EncodeToString(providertest.PNG(1536, 1024)))
	}))
	defer srv.Close()

	fmt.Println(providertest.Demo(openai.New, openai.Config{Config: provider.Config{BaseURL: srv.URL + "/v1", APIKey: "sk-example"}}, providertest.T2I("a lighthouse at dusk", imagegen.Aspect16x9)))
	// Output:
	// POST /v1/images/generations gpt-image-1 1536x1024
	// openai/gpt-image-1 2 image/png 1536x864
}
