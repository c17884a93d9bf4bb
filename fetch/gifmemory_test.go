package fetch_test

import (
	"bytes"
	"image"
	"image/color/palette"
	"image/gif"
	"testing"
)

// interlacedGIF is a w×h GIF, its one frame marked interlaced: Go's
// encoder writes none, so the flag of the frame it writes is set (its
// rows come out in another order, all of them the same colour).
func interlacedGIF(t *testing.T, w, h int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := gif.Encode(&b, image.NewPaletted(image.Rect(0, 0, w, h), palette.Plan9), nil); err != nil {
		t.Fatal(err)
	}
	data := b.Bytes()
	i := 13 // the header and the logical screen descriptor
	if data[10]&0x80 != 0 {
		i += 3 << (data[10]&7 + 1) // the global colour table
	}
	if data[i] != 0x2C {
		t.Fatalf("no image descriptor at %d: %#x", i, data[i])
	}
	data[i+9] |= 0x40 // interlaced
	return data
}

// An interlaced GIF DecodeWithin accepts under a decoded-size limit
// takes no more than that limit to decode: image/gif reorders its rows
// into a second image of the frame's size (1 byte a pixel), where the
// header check counted the palette's 1 byte a pixel once.
func TestDecodedInterlacedGIFStaysWithinLimit(t *testing.T) {
	const w, h = 1024, 1024
	decodesWithinLimit(t, interlacedGIF(t, w, h), w*h)
}
