package fetch_test

import (
	"testing"

	"github.com/imagegen/imagegen/fetch"
)

// FuzzDecodeConfigWithin gives any bytes, from small crafted JPEGs of
// every shape (progressive, CMYK, many scans) onward, to the header
// check that guards every decode of a user's reference (and from small
// crafted PNGs: gray with tRNS, interlaced): it never
// panics, and what it accepts decodes (when it decodes) to the size its
// header named, within the same limits.
func FuzzDecodeConfigWithin(f *testing.F) {
	for _, s := range []jpegShape{{nComp: 1}, {nComp: 3}, {nComp: 3, subsampled: true, prog: true}, {nComp: 4, prog: true}, {nComp: 3, rgb: true}} {
		f.Add(craftedJPEG(40, 24, s))
	}
	f.Add(scansJPEG(16, 16, 3))
	f.Add([]byte{0xFF, 0xD8, 0xFF, 0xD9})
	for _, s := range []pngShape{{colorType: 0, depth: 16, trns: true}, {colorType: 6, depth: 8, interlaced: true}, {colorType: 2, depth: 8, trns: true}} {
		f.Add(craftedPNG(40, 24, s))
	}
	const maxPixels, maxBytes = 1 << 16, 1 << 20
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, _, err := fetch.DecodeConfigWithin(data, maxPixels, maxBytes)
		if err != nil {
			return
		}
		img, _, err := fetch.DecodeWithin(data, maxPixels, maxBytes)
		if err != nil {
			return
		}
		if b := img.Bounds(); b.Dx() != cfg.Width || b.Dy() != cfg.Height {
			t.Fatalf("the header said %dx%d, the image is %dx%d", cfg.Width, cfg.Height, b.Dx(), b.Dy())
		}
	})
}
