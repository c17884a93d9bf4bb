package fetch_test

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"runtime"
	"testing"

	"github.com/imagegen/imagegen/fetch"
)

// pngShape is a crafted PNG's: its colour type (0 gray, 2 truecolour, 6
// truecolour with alpha), bit depth, whether a tRNS chunk names a
// transparent colour and whether it is interlaced (Adam7).
type pngShape struct {
	colorType, depth byte
	trns, interlaced bool
}

// craftedPNG is a w×h PNG of that shape, every pixel zero: a small file
// that image/png decodes whole.
func craftedPNG(w, h int, s pngShape) []byte {
	channels := map[byte]int{0: 1, 2: 3, 6: 4}[s.colorType]
	var idat bytes.Buffer
	zw := zlib.NewWriter(&idat)
	passes := [][4]int{{0, 0, 1, 1}} // x and y offset, x and y step
	if s.interlaced {
		passes = [][4]int{{0, 0, 8, 8}, {4, 0, 8, 8}, {0, 4, 4, 8}, {2, 0, 4, 4}, {0, 2, 2, 4}, {1, 0, 2, 2}, {0, 1, 1, 2}}
	}
	for _, p := range passes {
		pw, ph := (w-p[0]+p[2]-1)/p[2], (h-p[1]+p[3]-1)/p[3]
		if pw == 0 || ph == 0 {
			continue // an empty pass has no rows
		}
		row := make([]byte, 1+(pw*channels*int(s.depth)+7)/8) // filter type 0, then the pixels
		for range ph {
			_, _ = zw.Write(row)
		}
	}
	_ = zw.Close()
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(typ string, data []byte) {
		b.Write(binary.BigEndian.AppendUint32(nil, uint32(len(data))))
		c := append([]byte(typ), data...)
		b.Write(c)
		b.Write(binary.BigEndian.AppendUint32(nil, crc32.ChecksumIEEE(c)))
	}
	ihdr := binary.BigEndian.AppendUint32(nil, uint32(w))
	ihdr = binary.BigEndian.AppendUint32(ihdr, uint32(h))
	interlace := byte(0)
	if s.interlaced {
		interlace = 1
	}
	chunk("IHDR", append(ihdr, s.depth, s.colorType, 0, 0, interlace))
	if s.trns {
		chunk("tRNS", make([]byte, 2*channels)) // one 16-bit sample a channel
	}
	chunk("IDAT", idat.Bytes())
	chunk("IEND", nil)
	return b.Bytes()
}

// A PNG DecodeWithin accepts under a decoded-size limit takes no more
// than that limit to decode (README, "Memory per task"), tRNS or not,
// interlaced or not.
// image/png's DecodeConfig stops at the header and reports a gray PNG's
// model (1 or 2 bytes a pixel) even when a tRNS chunk follows, with
// which image/png decodes it to NRGBA or NRGBA64 (4 or 8): a 16-bit
// gray PNG with a transparent colour passed the 160 MB check at 40
// million pixels and took 320 MB to decode. An interlaced PNG is
// decoded pass by pass, each pass into an image of its own merged into
// the whole: twice the pixels' bytes, where once was counted.
func TestDecodedPNGStaysWithinLimit(t *testing.T) {
	const w, h = 1024, 1024
	const px = w * h
	shapes := []pngShape{
		{colorType: 0, depth: 1, trns: true}, {colorType: 0, depth: 8}, {colorType: 0, depth: 8, trns: true},
		{colorType: 0, depth: 16}, {colorType: 0, depth: 16, trns: true},
		{colorType: 2, depth: 8, trns: true}, {colorType: 2, depth: 16, trns: true}, {colorType: 6, depth: 16},
		{colorType: 6, depth: 8, interlaced: true}, {colorType: 6, depth: 16, interlaced: true},
		{colorType: 0, depth: 16, trns: true, interlaced: true},
	}
	for _, shape := range shapes {
		t.Run(fmt.Sprintf("%+v", shape), func(t *testing.T) {
			decodesWithinLimit(t, craftedPNG(w, h, shape), px)
		})
	}
}

// A PNG one pixel high takes no more than the limit to decode either:
// image/png holds two rows of the raw image (the row and the one above,
// for the filters) beside the image, which for a 20-million-pixel row
// of 16-bit RGBA are 320 MB, twice the image the header check counted.
func TestDecodedWidePNGStaysWithinLimit(t *testing.T) {
	const w, h = 1 << 20, 1
	const px = w * h
	shapes := []pngShape{
		{colorType: 0, depth: 8}, {colorType: 6, depth: 8}, {colorType: 6, depth: 16},
		{colorType: 6, depth: 16, interlaced: true}, {colorType: 0, depth: 16, trns: true},
	}
	for _, shape := range shapes {
		t.Run(fmt.Sprintf("%+v", shape), func(t *testing.T) {
			decodesWithinLimit(t, craftedPNG(w, h, shape), px)
		})
	}
}

// decodesWithinLimit checks that data, an image of px pixels, decodes
// under every decoded-size limit DecodeConfigWithin accepts it under
// (perPixel bytes a pixel, each in turn; by default from 1 to 48; one
// at least) allocating no more than that limit, beside a small slack for
// the decoder's own state (zlib's, a JPEG's tables and buffers).
func decodesWithinLimit(t *testing.T, data []byte, px int64, perPixel ...int64) {
	t.Helper()
	const slack = 1 << 20
	if len(perPixel) == 0 {
		perPixel = []int64{1, 2, 4, 8, 16, 32, 48}
	}
	if _, _, err := fetch.DecodeWithin(data, px, 64*px); err != nil {
		t.Fatalf("the crafted image does not decode: %v", err)
	}
	accepted := 0
	for _, perPixel := range perPixel {
		limit := perPixel * px
		_, _, err := fetch.DecodeConfigWithin(data, px, limit)
		if errors.Is(err, fetch.ErrTooManyPixels) {
			continue
		}
		if err != nil {
			t.Fatalf("limit %d: %v", limit, err)
		}
		accepted++
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		img, _, err := fetch.DecodeWithin(data, px, limit)
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatalf("limit %d: accepted on its header, then %v", limit, err)
		}
		runtime.KeepAlive(img)
		if got := int64(after.TotalAlloc - before.TotalAlloc); got > limit+slack {
			t.Errorf("accepted under a limit of %d bytes (%d a pixel), decoding allocated %d (%.1f a pixel)",
				limit, perPixel, got, float64(got)/float64(px))
		}
	}
	if accepted == 0 {
		t.Fatalf("refused under every limit up to %d bytes a pixel", perPixel[len(perPixel)-1])
	}
}
