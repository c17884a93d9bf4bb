package replicate

import (
	"net/http"
	"testing"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

// FuzzGenerate runs Generate against a loopback API that answers the
// create with the first input and the first read of the prediction with
// the second (later reads: failed; cancels: 200). Whatever they hold,
// Generate ends within its context with well-formed pictures (the
// fetcher's PNG, from replicate.delivery only, cropped to 1:1) or a
// *imagegen.ModelError, and classify gives a ModelError of one kind for
// the second input as a failure's body. Seeds: the wire examples of
// testdata.
func FuzzGenerate(f *testing.F) {
	starting := providertest.Spec(f, "prediction.starting.json")
	for _, name := range providertest.SeedFiles(f, "prediction.", "error.") {
		f.Add(starting, providertest.Spec(f, name))
		f.Add(providertest.Spec(f, name), starting)
	}
	srv := providertest.NewFuzzServer(f)
	m, err := New(Config{
		Config:       srv.ProviderConfig(),
		Fetcher:      providertest.FuzzFetcher{},
		PollInterval: 1,
		SyncWait:     -1,
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, create, read []byte) {
		reads := 0
		srv.Serve(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			switch {
			case r.Method == http.MethodPost && r.URL.Path != "/models/"+m.owner+"/"+m.name+"/predictions":
				_, _ = w.Write([]byte(`{}`)) // a cancel
			case r.Method == http.MethodPost:
				_, _ = w.Write(create)
			case reads == 0:
				reads++
				_, _ = w.Write(read)
			default:
				_, _ = w.Write([]byte(`{"id":"x","status":"failed","error":"fuzzing"}`))
			}
		})
		imgs, err := providertest.GenerateWithin(t, m, imagegen.Generation{Request: providertest.T2I("a cat", "1:1")})
		providertest.CheckOutcome(t, Provider, imgs, err)
		providertest.CheckClassify(t, Provider, classify, read)
	})
}
