package gemini_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/gemini"
	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

// A 16:9 picture from gemini-2.5-flash-image, which answers 1344x768;
// the adapter crops it to exactly 16:9. A fake Gemini API stands in for
// generativelanguage.googleapis.com.
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			GenerationConfig struct {
				ResponseModalities []string
				ImageConfig        struct{ AspectRatio string }
			}
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		fmt.Println("POST", r.URL.Path, req.GenerationConfig.ResponseModalities, req.GenerationConfig.ImageConfig.AspectRatio, r.Header.Get("x-goog-api-key") != "")
		fmt.Fprintf(w, `{"candidates":[{"content":{"role":"model","parts":[{"inlineData":{"mimeType":"image/png","data":%q}}]},"finishReason":"STOP","index":0}]}`,
			base64.StdEncoding.EncodeToString(providertest.PNG(1344, 768)))
	}))
	defer srv.Close()

	fmt.Println(providertest.Demo(gemini.New, gemini.Config{Config: provider.Config{BaseURL: srv.URL + "/v1beta", APIKey: "AIza-example"}}, providertest.T2I("a nano banana dish", imagegen.Aspect16x9)))
	// Output:
	// POST /v1beta/models/gemini-2.5-flash-image:generateContent [TEXT IMAGE] 16:9 true
	// gemini/gemini-2.5-flash-image 1 image/png 1344x756
}
