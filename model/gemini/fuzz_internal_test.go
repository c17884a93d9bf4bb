package gemini

import (
	"testing"

	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

// FuzzAnswer feeds any body to what reads Gemini's answers: as a 200
// answer (images: inlineData parts in any base64 form, block and finish
// reasons) it gives well-formed pictures or a *imagegen.ModelError; as a
// failure's body, classify (and retryDelay, Google's RetryInfo) give a
// ModelError of one kind for every status and no negative delay. Never
// a panic. Seeds: the wire examples of testdata.
func FuzzAnswer(f *testing.F) {
	providertest.AddSeeds(f, "response.", "error.")
	f.Fuzz(func(t *testing.T, body []byte) {
		imgs, err := images(&provider.Response{Status: 200, Body: body})
		providertest.CheckOutcome(t, Provider, imgs, err)
		providertest.CheckClassify(t, Provider, classify, body)
		if d, ok := retryDelay(provider.Failure{Status: 429, Body: body}); ok && d < 0 {
			t.Fatalf("retry delay %v", d)
		}
	})
}
