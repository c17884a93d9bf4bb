package comfyui_test

import (
	"errors"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/comfyui"
	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

// cutShort is a 2xx answer whose body the connection ends before it is
// whole (it promises 1000 bytes and sends a few), as an answer lost in
// transit after the server did the work.
var cutShort = answer{Status: 200, Header: map[string]string{"Content-Type": "application/json", "Content-Length": "1000"}, Body: []byte(`{"name":"up`)}

// The reference's upload (a file under this generation's fixed name,
// with overwrite) is safe to repeat: after a 2xx answer cut short it is
// sent again, and the generation goes on. POST /prompt is not: a second
// one would queue a second run, so its answer lost ends the call with
// provider.ErrMaybeAccepted, the prompt sent once.
func TestUploadIsRetriedAfterACutShortAnswerButThePromptIsNot(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	f.Queue(uploadCall, cutShort)
	m, _ := newModel(t, f, withCat(comfyui.Config{}))
	imgs, err := generate(t, m, providertest.I2I("as a watercolour", imagegen.AspectAuto, catURL), nil)
	is.NoErr(err)
	is.Equal(len(imgs), 1)
	is.Equal(f.Kinds(), append([]string{uploadCall, uploadCall}, followed...))

	f = newFake(t)
	f.Queue(promptCall, cutShort)
	m, _ = newModel(t, f, withCat(comfyui.Config{}))
	_, err = generate(t, m, providertest.I2I("as a watercolour", imagegen.AspectAuto, catURL), nil)
	is.True(errors.Is(err, provider.ErrMaybeAccepted))
	is.True(providertest.ModelError(t, err).Retryable)
	kinds := f.Kinds()
	is.Equal(kinds[0], uploadCall) // the upload, answered, sent once
	is.Equal(countOf(kinds, uploadCall), 1)
	is.Equal(countOf(kinds, promptCall), 1) // the prompt sent once
}

// countOf is how many of kinds are kind.
func countOf(kinds []string, kind string) int {
	n := 0
	for _, k := range kinds {
		if k == kind {
			n++
		}
	}
	return n
}
