package provider_test

import (
	"bytes"
	"image"
	"image/color"
	"image/gif"
	"net/http"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

// FuzzAnsweredImage feeds any bytes, as the picture of a 2xx answer, to
// what every adapter does with one: AnsweredImage, then CropAll to a
// ratio (or, for "", the nearest of its own size). The outcome is a
// *imagegen.ModelError, or an image CheckImage accepts, of the size
// CropSize gives its header's size (when the standard library reads
// it). The same bytes as Retry-After and retry-after-ms headers give no
// negative delay, and as an error body ErrorBody and DecodeJSON fail as
// they document. Never a panic.
func FuzzAnsweredImage(f *testing.F) {
	var g bytes.Buffer
	_ = gif.Encode(&g, image.NewPaletted(image.Rect(0, 0, 5, 2), color.Palette{color.Black, color.White}), nil)
	for i, data := range [][]byte{
		providertest.PNG(4, 3), providertest.JPEG(32, 18), providertest.PNG(20, 20), g.Bytes(),
		[]byte("RIFF\x00\x00\x00\x00WEBPVP8 "), []byte("\x89PNG\r\n\x1a\n"), []byte("120"), []byte("Wed, 21 Oct 2015 07:28:00 GMT"),
		[]byte(`{"error":{"message":"m","type":"t"}}`),
	} {
		f.Add(data, uint8(i))
	}
	ratios := append([]imagegen.AspectRatio{"", imagegen.AspectAuto}, imagegen.AspectRatios()...)
	f.Fuzz(func(t *testing.T, data []byte, r uint8) {
		ratio := ratios[int(r)%len(ratios)]
		img, err := provider.AnsweredImage("acme", "data[0]", data)
		if err != nil {
			providertest.CheckError(t, "acme", err)
		} else {
			providertest.CheckImage(t, 0, img)
			imgs, err := provider.CropAll("acme", []imagegen.GeneratedImage{img}, ratio)
			providertest.CheckOutcome(t, "acme", imgs, err)
			if err == nil {
				checkCropped(t, data, imgs[0], ratio)
			}
		}

		h := http.Header{"Retry-After": {string(data)}}
		if d, ok := provider.RetryAfter(h, time.Unix(1e9, 0)); ok && d < 0 {
			t.Fatalf("Retry-After %q: %v", data, d)
		}
		h = http.Header{"Retry-After-Ms": {string(data)}}
		if d, ok := provider.RetryAfter(h, time.Unix(1e9, 0)); ok && d < 0 {
			t.Fatalf("retry-after-ms %q: %v", data, d)
		}
		type errorBody struct {
			Error struct{ Message string } `json:"error"`
		}
		if e, ok := provider.ErrorBody(data, func(e errorBody) bool { return e.Error.Message != "" }); ok && e.Error.Message == "" {
			t.Fatal("ErrorBody accepted what known refused")
		}
		var v any
		if err := provider.DecodeJSON("acme", &provider.Response{Status: 200, Body: data}, &v); err != nil {
			providertest.CheckError(t, "acme", err)
		}
	})
}

// checkCropped fails t unless out, data cropped to ratio, is data
// itself when that is already of the ratio (or the ratio is auto), and
// otherwise a picture no larger, of the ratio unless too small for it
// (CropSize), and of the size CropSize gives data's. A GIF is cropped
// from its first frame, which may be smaller than the screen its header
// gives, so only the first two hold for it.
func checkCropped(t *testing.T, data []byte, out imagegen.GeneratedImage, ratio imagegen.AspectRatio) {
	t.Helper()
	in, err := provider.ImageSize(data)
	if err != nil {
		if !bytes.Equal(out.Data, data) {
			t.Fatal("an image that does not decode was changed")
		}
		return
	}
	if ratio == "" {
		ratio = in.Ratio()
	}
	if w, _ := ratio.Size(); w == 0 || in.Is(ratio) {
		if !bytes.Equal(out.Data, data) {
			t.Fatalf("%v changed for ratio %q", in, ratio)
		}
		return
	}
	got, err := provider.ImageSize(out.Data)
	if err != nil {
		t.Fatalf("cropped image: %v", err)
	}
	if got.W > in.W || got.H > in.H || provider.CropSize(got.W, got.H, ratio) != got {
		t.Fatalf("%v cropped to %s: %v", in, ratio, got)
	}
	if want := provider.CropSize(in.W, in.H, ratio); got != want && out.ContentType != provider.GIF && provider.ContentType(data) != provider.GIF {
		t.Fatalf("%v cropped to %s: %v; want %v", in, ratio, got, want)
	}
}
