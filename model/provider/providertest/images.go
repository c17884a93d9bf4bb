package providertest

import (
	"bytes"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"testing"
)

// PNG returns a w x h PNG: a flat colour with a darker left half, so a
// crop's position can be told.
func PNG(w, h int) []byte {
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(&buf, picture(w, h)); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// JPEG returns a w x h JPEG.
func JPEG(w, h int) []byte {
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, picture(w, h), nil); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

func picture(w, h int) image.Image {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	row := make([]byte, 4*w)
	for x := range w {
		c := color.NRGBA{R: 200, G: 120, B: 40, A: 255}
		if x < w/2 {
			c = color.NRGBA{R: 40, G: 60, B: 160, A: 255}
		}
		copy(row[4*x:], []byte{c.R, c.G, c.B, c.A})
	}
	for y := range h {
		copy(img.Pix[y*img.Stride:], row)
	}
	return img
}

// Size decodes data's header and returns its size; it fails the test if
// data is not an image.
func Size(t testing.TB, data []byte) (w, h int) {
	t.Helper()
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("not an image: %v", err)
	}
	return cfg.Width, cfg.Height
}
