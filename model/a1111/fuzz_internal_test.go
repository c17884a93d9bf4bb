package a1111

import (
	"log/slog"
	"testing"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

// FuzzAnswer feeds any body to what reads an sdapi server's answers: as
// a txt2img/img2img answer (images, base64 or data: URI, and the seed of
// info) it gives one well-formed picture or a *imagegen.ModelError; as
// a progress answer it reports a fraction within [0, 1] or fails the
// same way; as a failure's body, classify gives a ModelError of one kind
// for every status. Never a panic. Seeds: the wire examples of testdata.
func FuzzAnswer(f *testing.F) {
	providertest.AddSeeds(f, "txt2img.response", "progress.", "internal-progress.", "error.")
	m, err := New(Config{Config: provider.Config{APIKey: "k", BaseURL: "http://127.0.0.1:1"}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		resp := &provider.Response{Status: 200, Body: body}
		imgs, err := m.images(resp)
		providertest.CheckOutcome(t, Provider, imgs, err)
		if err == nil && len(imgs) != 1 {
			t.Fatalf("%d images; want 1", len(imgs))
		}

		var p progress
		if err := provider.DecodeJSON(Provider, resp, &p); err != nil {
			providertest.CheckError(t, Provider, err)
		} else {
			g := imagegen.Generation{Progress: func(f float64) {
				if !(f >= 0 && f <= 1) {
					t.Fatalf("progress %v reported from %v", f, p.Progress)
				}
			}}
			g.ReportProgress(p.Progress)
		}
		var tp taskProgress
		if err := provider.DecodeJSON(Provider, resp, &tp); err != nil {
			providertest.CheckError(t, Provider, err)
		}

		providertest.CheckClassify(t, Provider, classify, body)
	})
}
