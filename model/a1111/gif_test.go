package a1111_test

import (
	"bytes"
	"image"
	"image/color/palette"
	gifpkg "image/gif"
	"testing"
)

// gif is a small GIF (60x40), a format the adapter converts to PNG.
func gif(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := gifpkg.Encode(&buf, image.NewPaletted(image.Rect(0, 0, 60, 40), palette.Plan9), nil); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
