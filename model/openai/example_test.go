package openai_test

import (
	"context"
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

	m, err := openai.New(openai.Config{Config: provider.Config{BaseURL: srv.URL + "/v1", APIKey: "sk-example"}})
	if err != nil {
		panic(err)
	}
	req := imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "a lighthouse at dusk", AspectRatio: imagegen.Aspect16x9}
	plan, err := m.Plan(req)
	if err != nil {
		panic(err)
	}
	imgs, err := m.Generate(context.Background(), imagegen.Generation{TaskID: "t1", Model: plan.Model, Request: req, Attempt: 1})
	if err != nil {
		panic(err)
	}
	size, _ := provider.ImageSize(imgs[0].Data)
	fmt.Println(plan.Model, plan.Cost, imgs[0].ContentType, size)
	// Output:
	// POST /v1/images/generations gpt-image-1 1536x1024
	// openai/gpt-image-1 2 image/png 1536x864
}
