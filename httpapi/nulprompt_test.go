package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen/wire"
)

// A prompt holding U+0000 (which PostgreSQL's text and jsonb cannot
// keep: a server error there, for every submit of its batch) is refused
// with 422 on the API and 400 on the OpenAI-compatible endpoint, and
// charges nothing.
func TestPromptWithNULIsRefused(t *testing.T) {
	is := is.New(t)
	e := newEnv(t, func(o *envOptions) { o.openAI = true })
	msg := wantError(t, e.submit(e.key, `{"scene":"text-to-image","prompt":"a\u0000fox"}`), http.StatusUnprocessableEntity, wire.APIInvalidParams)
	is.Equal(msg, "prompt: must not contain the NUL character (U+0000)")
	w := e.do("POST", "/v1/images/generations", e.key, `{"prompt":"a\u0000fox"}`)
	is.Equal(w.Code, http.StatusBadRequest)
	is.Equal(e.credits(), int64(10))
}
