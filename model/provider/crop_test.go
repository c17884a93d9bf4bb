package provider_test

import (
	"bytes"
	"image"
	"image/png"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

func TestCropToRatio(t *testing.T) {
	for _, enc := range []struct {
		name string
		make func(w, h int) []byte
		ct   string
	}{{"png", providertest.PNG, "image/png"}, {"jpeg", providertest.JPEG, "image/jpeg"}} {
		for _, r := range imagegen.AspectRatios() {
			t.Run(enc.name+" "+string(r), func(t *testing.T) {
				is := is.New(t)
				seed := int64(77)
				in := imagegen.GeneratedImage{ContentType: enc.ct, Data: enc.make(300, 200), Seed: &seed}
				out, changed, err := provider.CropToRatio(in, r)
				is.NoErr(err)
				w, h := providertest.Size(t, out.Data)
				is.True(provider.Size{w, h}.Is(r)) // exactly the ratio
				is.Equal(provider.Size{w, h}, provider.CropSize(300, 200, r))
				is.Equal(changed, r != imagegen.Aspect3x2)
				is.Equal(out.Seed, &seed) // the seed the provider reported stays
				if changed {
					is.Equal(out.ContentType, "image/png")
				} else {
					is.Equal(out.Data, in.Data) // untouched
				}
			})
		}
	}
}

func TestCropIsCentred(t *testing.T) {
	is := is.New(t)
	// 400x100, left half dark: a 1:1 crop keeps the middle 100 columns,
	// half dark and half light.
	out, changed, err := provider.CropToRatio(imagegen.GeneratedImage{ContentType: "image/png", Data: providertest.PNG(400, 100)}, imagegen.Aspect1x1)
	is.NoErr(err)
	is.True(changed)
	img, err := png.Decode(bytes.NewReader(out.Data))
	is.NoErr(err)
	is.Equal(img.Bounds(), image.Rect(0, 0, 100, 100))
	dark := func(x int) bool { r, _, _, _ := img.At(x, 50).RGBA(); return r < 0x8000 }
	is.True(dark(0) && dark(49))
	is.True(!dark(50) && !dark(99))
}

func TestCropKeepsWhatItCannotDecode(t *testing.T) {
	is := is.New(t)
	webp := imagegen.GeneratedImage{ContentType: "image/webp", Data: []byte("RIFF\x1a\x00\x00\x00WEBPVP8L\x0d\x00\x00\x00/\x00\x00\x00\x10\x07\x10\x11\x11\x88\x88\xfe\x07\x00")}
	out, changed, err := provider.CropToRatio(webp, imagegen.Aspect16x9)
	is.NoErr(err)
	is.True(!changed)
	is.Equal(out, webp)
	_, err = provider.ImageSize(webp.Data)
	is.True(err != nil)
	is.Equal(provider.ContentType(webp.Data), "image/webp")
	is.Equal(provider.ContentType([]byte("hello")), "")
}
