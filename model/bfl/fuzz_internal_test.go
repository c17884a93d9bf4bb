package bfl

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

// FuzzGenerate runs Generate against a loopback server that answers the
// submit with the first input and the first poll of get_result with the
// second ("{{base}}" in either reads as the server's URL, so that a
// polling_url can name it); later polls answer status Error. Whatever
// they hold, Generate ends within its context with a well-formed
// picture (the fetcher's PNG, cropped to 1:1) or a *imagegen.ModelError,
// reports progress within [0, 1], and classify gives a ModelError of
// one kind for the second input as a failure's body. Seeds: the wire
// examples of testdata.
func FuzzGenerate(f *testing.F) {
	submit := providertest.Spec(f, "submit.response.json")
	own := bytes.ReplaceAll(submit, []byte("https://api.us1.bfl.ai"), []byte("{{base}}"))
	for _, name := range providertest.SeedFiles(f, "result.", "error.") {
		f.Add(own, providertest.Spec(f, name))
	}
	f.Add(submit, providertest.Spec(f, "result.ready.json"))
	srv := providertest.NewFuzzServer(f)
	m, err := New(Config{
		Config:       srv.ProviderConfig(),
		Fetcher:      providertest.FuzzFetcher{},
		PollInterval: 1,
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, submit, result []byte) {
		base := []byte(srv.URL)
		submit, result = bytes.ReplaceAll(submit, []byte("{{base}}"), base), bytes.ReplaceAll(result, []byte("{{base}}"), base)
		polls := 0
		srv.Serve(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			switch {
			case !strings.HasSuffix(r.URL.Path, "/v1/get_result"):
				_, _ = w.Write(submit)
			case polls == 0:
				polls++
				_, _ = w.Write(result)
			default:
				_, _ = w.Write([]byte(`{"id":"x","status":"Error"}`))
			}
		})
		imgs, err := providertest.GenerateWithin(t, m, imagegen.Generation{Request: providertest.T2I("a cat", "1:1")})
		providertest.CheckOutcome(t, Provider, imgs, err)
		providertest.CheckClassify(t, Provider, classify, result)
	})
}
