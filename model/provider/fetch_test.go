package provider_test

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/gif"
	"slices"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

func gifBytes() []byte {
	var buf bytes.Buffer
	img := image.NewPaletted(image.Rect(0, 0, 30, 20), color.Palette{color.Black, color.White})
	if err := gif.Encode(&buf, img, nil); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

func TestFetchReferences(t *testing.T) {
	is := is.New(t)
	f := &providertest.Fetcher{Images: map[string]providertest.Image{
		"https://img.example/a.png": {Data: providertest.PNG(64, 48), ContentType: "application/octet-stream"}, // type from the bytes
		"https://img.example/b.jpg": {Data: providertest.JPEG(20, 40), ContentType: "image/jpeg"},
		"https://img.example/c.gif": {Data: gifBytes(), ContentType: "image/gif"},
		"https://img.example/d":     {Data: []byte("\x00\x00\x00\x18ftypheic"), ContentType: "image/heic; q=1"}, // HEIC from its ftyp brand
	}}
	urls := []string{"https://img.example/a.png", "https://img.example/b.jpg", "https://img.example/c.gif", "https://img.example/d"}
	refs, err := provider.FetchReferences(context.Background(), "acme", f, urls, provider.PNG, provider.JPEG, provider.HEIC)
	is.NoErr(err)
	asked := f.Asked()
	slices.Sort(asked)
	is.Equal(asked, urls) // each once (at once, so in any order); the answers come back in order
	is.Equal(len(refs), 4)
	is.Equal(refs[0].ContentType, "image/png")
	is.Equal([2]int{refs[0].Width, refs[0].Height}, [2]int{64, 48})
	is.Equal(refs[1].ContentType, "image/jpeg")
	is.Equal(refs[2].ContentType, "image/png") // GIF is not accepted: converted
	w, h := providertest.Size(t, refs[2].Data)
	is.Equal([2]int{w, h}, [2]int{30, 20})
	is.Equal(refs[3].ContentType, "image/heic")
	is.Equal(refs[3].Width, 0) // unknown to the standard library
}

func TestFetchReferencesFailures(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name         string
		img          providertest.Image
		retryable    bool
		invalidInput bool
		msg          string
	}{
		{"unreachable", providertest.Image{Err: errors.New("address not allowed: 10.0.0.1")}, false, true, "image_input[1] could not be downloaded"},
		{"timeout", providertest.Image{Err: context.DeadlineExceeded}, false, true, "image_input[1] timed out while downloading"},
		{"not an image", providertest.Image{Data: []byte("<html>"), ContentType: "text/html"}, false, true, "image_input[1] is not a supported image"},
		{"webp not accepted", providertest.Image{Data: []byte("RIFF\x1a\x00\x00\x00WEBPVP8L"), ContentType: "image/webp"}, false, true, "image_input[1] is not a supported image"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			f := &providertest.Fetcher{Images: map[string]providertest.Image{
				"https://img.example/ok.png": {Data: providertest.PNG(8, 8)},
				"https://img.example/bad":    tc.img,
			}}
			_, err := provider.FetchReferences(ctx, "acme", f, []string{"https://img.example/ok.png", "https://img.example/bad"}, provider.PNG)
			me := modelError(t, err)
			is.Equal(me.Retryable, tc.retryable)
			is.Equal(me.InvalidInput, tc.invalidInput)
			is.Equal(me.Message, tc.msg)
			is.True(!strings.Contains(me.Message, "10.0.0.1")) // the fetcher's words stay in Err
		})
	}
	t.Run("no fetcher", func(t *testing.T) {
		is := is.New(t)
		_, err := provider.FetchReferences(ctx, "acme", nil, []string{"https://img.example/a.png"})
		is.True(modelError(t, err).InvalidInput)
		refs, err := provider.FetchReferences(ctx, "acme", nil, nil)
		is.NoErr(err)
		is.Equal(len(refs), 0)
	})
}

func TestDownloadResult(t *testing.T) {
	is := is.New(t)
	png := providertest.PNG(16, 9)
	f := &providertest.Fetcher{Images: map[string]providertest.Image{
		"https://cdn.example/out.png?sig=secret": {Data: png, ContentType: "binary/octet-stream"},
		"https://cdn.example/page":               {Data: []byte("<html>")},
	}}
	img, err := provider.DownloadResult(context.Background(), "acme", f, "https://cdn.example/out.png?sig=secret")
	is.NoErr(err)
	is.Equal(img.ContentType, "image/png")
	is.Equal(img.Data, png)

	_, err = provider.DownloadResult(context.Background(), "acme", f, "https://cdn.example/gone.png?sig=secret")
	me := modelError(t, err)
	is.True(me.Retryable)
	is.True(!strings.Contains(err.Error(), "sig=secret"))

	_, err = provider.DownloadResult(context.Background(), "acme", f, "https://cdn.example/page")
	is.True(modelError(t, err).Retryable)

	_, err = provider.DownloadResult(context.Background(), "acme", nil, "https://cdn.example/out.png")
	is.True(!modelError(t, err).Retryable)
}
