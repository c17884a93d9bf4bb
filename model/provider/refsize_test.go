package provider_test

import (
	"context"
	"errors"
	"image"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/fetch"
	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

// jpegClaiming returns a small JPEG whose header says it is w×h: the
// frame's size in its SOF0 segment written over, the rest as encoded.
func jpegClaiming(t *testing.T, w, h int) []byte {
	data := providertest.JPEG(16, 16)
	for i := 0; i+8 < len(data); i++ {
		if data[i] == 0xFF && data[i+1] == 0xC0 { // SOF0: marker, length (2), precision (1), height (2), width (2)
			data[i+5], data[i+6] = byte(h>>8), byte(h)
			data[i+7], data[i+8] = byte(w>>8), byte(w)
			return data
		}
	}
	t.Fatal("no SOF0 segment in the test JPEG")
	return nil
}

// limitedFetcher is a scripted fetcher that decodes under limits of its
// own, as the guarded fetcher does under its Config.
type limitedFetcher struct {
	*providertest.Fetcher
	maxPixels int64
}

func (f limitedFetcher) Decode(data []byte) (image.Image, string, error) {
	return fetch.DecodeWithin(data, f.maxPixels, 4*f.maxPixels)
}

// A reference the provider must have converted (a JPEG where only PNG is
// accepted) is decoded only once its header is within the decoding
// limits: a few hundred bytes that name ten thousand pixels square are
// refused as the user's input before a pixel is allocated, and a
// fetcher's own limits are the ones that apply.
func TestFetchReferencesBoundsTheConversion(t *testing.T) {
	ctx := context.Background()
	huge := jpegClaiming(t, 10000, 10000)
	scripted := func(data []byte) *providertest.Fetcher {
		return &providertest.Fetcher{Images: map[string]providertest.Image{
			"https://img.example/a.jpg": {Data: data, ContentType: "image/jpeg"},
		}}
	}
	refuses := func(t *testing.T, f fetch.ImageFetcher) {
		is := is.New(t)
		_, err := provider.FetchReferences(ctx, "acme", f, []string{"https://img.example/a.jpg"}, provider.PNG)
		is.True(errors.Is(err, fetch.ErrTooManyPixels)) // refused on the header, not by decoding the short data
		var me *imagegen.ModelError
		is.True(errors.As(err, &me))
		is.True(me.InvalidInput) // the user's reference: no retry
	}
	t.Run("fetch's defaults", func(t *testing.T) { refuses(t, scripted(huge)) })
	t.Run("the fetcher's limits", func(t *testing.T) {
		small := providertest.JPEG(100, 100)
		refuses(t, limitedFetcher{scripted(small), 5000})

		is := is.New(t)
		refs, err := provider.FetchReferences(ctx, "acme", limitedFetcher{scripted(small), 10000}, []string{"https://img.example/a.jpg"}, provider.PNG)
		is.NoErr(err)
		is.Equal(refs[0].ContentType, provider.PNG) // within them, converted
	})
}
