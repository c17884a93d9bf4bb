package gemini

import (
	"testing"

	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

// The default HTTP client sets no timeout on the answer: the generation
// call answers only when the image is done, which may take longer than
// provider.DefaultHTTPClient's 3-minute header timeout under a raised
// GenerateTimeout, so the context bounds the call (and Config.MaxDuration
// a context without a deadline). Its connects are still bounded.
func TestDefaultClientLeavesTheAnswerToTheContext(t *testing.T) {
	m, err := New(Config{Config: provider.Config{APIKey: "k"}})
	if err != nil {
		t.Fatal(err)
	}
	providertest.ContextBound(t, m.client.HTTP, m.client.MaxDuration)
}
