package fal

import (
	"net/http"
	"strings"
	"testing"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

// FuzzGenerate runs Generate against a loopback queue that accepts the
// submit (the wire example), answers the first status poll with the
// first input (later polls: COMPLETED) and the result with the second.
// Whatever they hold, Generate ends within its context with well-formed
// pictures (the fetcher's PNG or a data: URI, cropped to 1:1) or a
// *imagegen.ModelError, and classify gives a ModelError of one kind for
// the second input as a failure's body. Seeds: the wire examples of
// testdata.
func FuzzGenerate(f *testing.F) {
	result := providertest.Spec(f, "result.flux-dev.json")
	for _, name := range providertest.SeedFiles(f, "status.") {
		f.Add(providertest.Spec(f, name), result)
	}
	completed := providertest.Spec(f, "status.completed.json")
	for _, name := range providertest.SeedFiles(f, "error.", "cancel.") {
		f.Add(completed, providertest.Spec(f, name))
	}
	f.Add(completed, []byte(`{"images":[{"url":"data:image/png;base64,iVBORw0KGgo="}]}`))
	submit := providertest.Spec(f, "submit.response.json")
	srv := providertest.NewFuzzServer(f)
	m, err := New(Config{
		Config:       srv.ProviderConfig(),
		Fetcher:      providertest.FuzzFetcher{},
		PollInterval: 1,
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, status, result []byte) {
		polls := 0
		srv.Serve(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			switch {
			case r.Method == http.MethodPost:
				_, _ = w.Write(submit)
			case strings.HasSuffix(r.URL.Path, "/cancel"):
				_, _ = w.Write([]byte(`{"status":"CANCELLATION_REQUESTED"}`))
			case strings.HasSuffix(r.URL.Path, "/status") && polls == 0:
				polls++
				_, _ = w.Write(status)
			case strings.HasSuffix(r.URL.Path, "/status"):
				_, _ = w.Write([]byte(`{"status":"COMPLETED"}`))
			default:
				_, _ = w.Write(result)
			}
		})
		imgs, err := providertest.GenerateWithin(t, m, imagegen.Generation{Request: providertest.T2I("a cat", "1:1")})
		providertest.CheckOutcome(t, Provider, imgs, err)
		providertest.CheckClassify(t, Provider, classify, result)
	})
}
