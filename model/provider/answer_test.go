package provider_test

import (
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

func TestAnswerRatio(t *testing.T) {
	png := provider.Reference{Width: 1600, Height: 900}
	webp := provider.Reference{} // size unknown
	for _, tc := range []struct {
		name string
		req  imagegen.Request
		refs []provider.Reference
		want imagegen.AspectRatio
	}{
		{"asked ratio", providertest.T2I("x", imagegen.Aspect3x4), nil, imagegen.Aspect3x4},
		{"auto text-to-image", providertest.T2I("x", imagegen.AspectAuto), nil, imagegen.Aspect1x1},
		{"auto from the first reference", providertest.I2I("x", imagegen.AspectAuto, "a", "b"), []provider.Reference{png, webp}, imagegen.Aspect16x9},
		{"auto, first reference of unknown size", providertest.I2I("x", imagegen.AspectAuto, "a"), []provider.Reference{webp}, ""},
		{"asked ratio wins over an unknown reference", providertest.I2I("x", imagegen.Aspect2x3, "a"), []provider.Reference{webp}, imagegen.Aspect2x3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is.New(t).Equal(provider.AnswerRatio(tc.req, tc.refs), tc.want)
		})
	}
}

func TestCropAll(t *testing.T) {
	is := is.New(t)
	size := func(img imagegen.GeneratedImage) provider.Size {
		w, h := providertest.Size(t, img.Data)
		return provider.Size{W: w, H: h}
	}
	webp := imagegen.GeneratedImage{ContentType: "image/webp", Data: []byte("RIFF\x24\x00\x00\x00WEBPVP8 ")}
	imgs, err := provider.CropAll("acme", []imagegen.GeneratedImage{
		{ContentType: "image/png", Data: providertest.PNG(1000, 700)},
		{ContentType: "image/png", Data: providertest.PNG(1000, 1000)},
		webp,
	}, imagegen.Aspect16x9)
	is.NoErr(err)
	is.Equal(size(imgs[0]), provider.CropSize(1000, 700, imagegen.Aspect16x9)) // centre-cropped to 16:9
	is.Equal(size(imgs[1]), provider.CropSize(1000, 1000, imagegen.Aspect16x9))
	is.Equal(imgs[2], webp) // undecodable: kept

	// "": each to the allowed ratio nearest its own size.
	imgs, err = provider.CropAll("acme", []imagegen.GeneratedImage{{ContentType: "image/png", Data: providertest.PNG(1000, 700)}, webp}, "")
	is.NoErr(err)
	is.Equal(size(imgs[0]), provider.CropSize(1000, 700, imagegen.Aspect3x2)) // 10:7 is nearest 3:2
	is.Equal(imgs[1], webp)
}

func TestAnsweredImage(t *testing.T) {
	is := is.New(t)
	img, err := provider.AnsweredImage("acme", "data[0]", providertest.JPEG(4, 3))
	is.NoErr(err)
	is.Equal(img.ContentType, "image/jpeg") // from the bytes
	is.Equal(img.Data, providertest.JPEG(4, 3))

	_, err = provider.AnsweredImage("acme", "data[1]", []byte(`{"not":"an image"}`))
	me := modelError(t, err)
	is.True(me.Retryable) // another call may answer with an image
	is.Equal(me.Message, provider.MsgBadAnswer)
	is.Equal(me.Err.Error(), "data[1] is not an image")
}

// A PNG, JPEG or GIF whose header gives no size is not an image, though
// its first bytes name the format (found by fuzzing fal's answers: a
// data: URI of the PNG signature alone).
func TestAnsweredImageHeaderOnly(t *testing.T) {
	for name, data := range map[string][]byte{
		"PNG signature": []byte("\x89PNG\r\n\x1a\n"),
		"JPEG start":    {0xff, 0xd8, 0xff, 0xe0},
		"GIF of 0x0":    []byte("GIF89a\x00\x00\x00\x00\x00\x00\x00;"),
	} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			_, err := provider.AnsweredImage("acme", "data[0]", data)
			me := modelError(t, err)
			is.True(me.Retryable)
			is.Equal(me.Message, provider.MsgBadAnswer)
		})
	}
}
