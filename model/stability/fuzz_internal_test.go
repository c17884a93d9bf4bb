package stability

import (
	"testing"

	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

// FuzzAnswer feeds any body to what reads Stability's answers: as a 200
// JSON answer (answerImage: the base64 image and its finish_reason) it
// gives a well-formed picture or a *imagegen.ModelError; as a failure's
// body, classify gives a ModelError of one kind for every status. Never
// a panic. Seeds: the wire examples of testdata.
func FuzzAnswer(f *testing.F) {
	providertest.AddSeeds(f, "generate.response.", "error.")
	f.Fuzz(func(t *testing.T, body []byte) {
		img, err := answerImage(&provider.Response{Status: 200, Body: body})
		if err != nil {
			providertest.CheckError(t, Provider, err)
		} else {
			providertest.CheckImage(t, 0, img)
		}
		providertest.CheckClassify(t, Provider, classify, body)
	})
}
