package a1111

import (
	"net/http"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen/model/provider"
)

// The default HTTP client sets no timeout on the answer (txt2img answers
// when the image is done, which may take longer than 3 minutes on a slow
// GPU under a raised GenerateTimeout): the context bounds the call. Its
// connects are still bounded.
func TestDefaultClientLeavesTheAnswerToTheContext(t *testing.T) {
	is := is.New(t)
	m, err := New(Config{Config: provider.Config{BaseURL: "http://127.0.0.1:1"}})
	is.NoErr(err)
	hc := m.client.HTTP
	is.Equal(hc.Timeout, time.Duration(0))
	tr, ok := hc.Transport.(*http.Transport)
	is.True(ok)
	is.Equal(tr.ResponseHeaderTimeout, time.Duration(0))
	is.True(tr.DialContext != nil)
	is.Equal(tr.TLSHandshakeTimeout, 10*time.Second)
	is.Equal(m.client.MaxDuration, DefaultMaxDuration)
}
