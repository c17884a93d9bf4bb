package provider_test

import (
	"context"
	"errors"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

// A reference is typed from its bytes: the Content-Type its server
// declared is never passed on to the provider, whether it names another
// image type or an image where there is none.
func TestReferenceTypedFromItsBytes(t *testing.T) {
	for _, tc := range []struct {
		name, declared string
		data           []byte
		want           string // "" when refused
	}{
		{"JPEG declared PNG", "image/png", providertest.JPEG(20, 40), provider.JPEG},
		{"PNG declared octet-stream", "application/octet-stream", providertest.PNG(8, 8), provider.PNG},
		{"WebP declared JPEG", "image/jpeg", []byte("RIFF\x1a\x00\x00\x00WEBPVP8L\x0d\x00\x00\x00\x2f\x00\x00\x00\x10\x07\x10\x11\x11\x88\x88\xfe\x07\x00"), provider.WebP},
		{"HEIC declared octet-stream", "application/octet-stream", []byte("\x00\x00\x00\x18ftypheic\x00\x00\x00\x00mif1heic"), provider.HEIC},
		{"HEIF by its mif1 brand", "", []byte("\x00\x00\x00\x18ftypmif1\x00\x00\x00\x00mif1"), provider.HEIF},
		{"text declared PNG", "image/png", []byte("<html><body>not found</body></html>"), ""},
		{"unknown bytes declared HEIC", "image/heic", []byte("\x00\x01\x02\x03 definitely not an image"), ""},
		{"AVIF declared HEIF", "image/heif", []byte("\x00\x00\x00\x1cftypavif\x00\x00\x00\x00avifmif1"), ""},
		{"PNG signature alone declared PNG", "image/png", []byte("\x89PNG\r\n\x1a\n"), ""},
		{"BMP declared PNG", "image/png", []byte("BM\x3a\x00\x00\x00\x00\x00\x00\x00\x36\x00\x00\x00"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			f := &providertest.Fetcher{Images: map[string]providertest.Image{"https://img.example/r": {Data: tc.data, ContentType: tc.declared}}}
			refs, err := provider.FetchReferences(context.Background(), "acme", f, []string{"https://img.example/r"}, provider.PNG, provider.JPEG, provider.WebP, provider.HEIC, provider.HEIF)
			if tc.want != "" {
				is.NoErr(err)
				is.Equal(refs[0].ContentType, tc.want)
				return
			}
			is.Equal(len(refs), 0)
			me := modelError(t, err)
			is.True(me.InvalidInput) // the user's input: a client error, not retried
			is.True(!me.Retryable)
			is.Equal(me.Message, "image_input[0] is not a supported image")
			is.True(errors.Is(err, provider.ErrNotReferenceImage))
		})
	}
}

// Without an accept list (any image passes as it is), the bytes still
// decide: a BMP or an HTML page declared an image is refused.
func TestReferenceWithoutAcceptListIsStillSniffed(t *testing.T) {
	is := is.New(t)
	f := &providertest.Fetcher{Images: map[string]providertest.Image{"https://img.example/r": {Data: []byte("BM\x3a\x00\x00\x00\x00\x00\x00\x00\x36\x00\x00\x00"), ContentType: "image/png"}}}
	_, err := provider.FetchReferences(context.Background(), "acme", f, []string{"https://img.example/r"})
	is.True(errors.Is(err, provider.ErrNotReferenceImage))
}
