package openai

import (
	"context"
	"testing"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

// FuzzAnswer feeds any body to what reads the Images API's answers: as
// a 200 answer (images: base64 or URL pictures, centre-cropped to 1:1),
// it gives pictures that are well formed or a *imagegen.ModelError; as
// a failure's body, classify gives a ModelError of one kind for every
// status. Never a panic. Seeds: the wire examples of testdata.
func FuzzAnswer(f *testing.F) {
	providertest.AddSeeds(f, "generations.response.", "error.")
	m, err := New(Config{Config: provider.Config{APIKey: "k", BaseURL: "http://127.0.0.1:1"}, Fetcher: providertest.FuzzFetcher{}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		imgs, err := m.images(context.Background(), &provider.Response{Status: 200, Body: body}, imagegen.AspectRatio("1:1"))
		providertest.CheckOutcome(t, Provider, imgs, err)
		providertest.CheckClassify(t, Provider, classify, body)
	})
}
