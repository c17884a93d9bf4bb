package stability_test

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
	"github.com/imagegen/imagegen/model/stability"
)

// A 4:3 picture from Stable Image Core: the API has no 4:3, so the
// adapter asks for 5:4, the nearest it has, and centre-crops the
// 1088x896 answer to 1088x816. A fake API stands in for api.stability.ai.
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Println("POST", r.URL.Path, r.FormValue("aspect_ratio"), r.Header.Get("Accept"))
		fmt.Fprintf(w, `{"image":%q,"finish_reason":"SUCCESS","seed":343940597}`, base64.StdEncoding.EncodeToString(providertest.PNG(1088, 896)))
	}))
	defer srv.Close()

	fmt.Println(providertest.Demo(stability.New, stability.Config{Config: provider.Config{BaseURL: srv.URL, APIKey: "sk-example"}}, providertest.T2I("a lighthouse on a cliff", imagegen.Aspect4x3)))
	// Output:
	// POST /v2beta/stable-image/generate/core 5:4 application/json
	// stability/core 2 image/png 1088x816
}
