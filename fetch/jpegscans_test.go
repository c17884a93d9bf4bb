package fetch_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/imagegen/imagegen/fetch"
)

// scansJPEG is a w×h progressive gray JPEG of a DC scan and then acScans
// AC scans, each of which skips every block in a few bytes (end-of-band
// runs of 32767 blocks): on each, image/jpeg still goes through every
// block of the image.
func scansJPEG(w, h, acScans int) []byte {
	var b bytes.Buffer
	b.Write([]byte{0xFF, 0xD8})
	b.Write([]byte{0xFF, 0xDB, 0, 67, 0})
	b.Write(bytes.Repeat([]byte{1}, 64))
	b.Write([]byte{0xFF, 0xC2, 0, 11, 8, byte(h >> 8), byte(h), byte(w >> 8), byte(w), 1, 1, 0x11, 0})
	oneCode := func(v byte) []byte { return []byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, v} }
	b.Write(append([]byte{0xFF, 0xC4, 0, 20, 0x00}, oneCode(0)...))    // DC: a difference of 0
	b.Write(append([]byte{0xFF, 0xC4, 0, 20, 0x10}, oneCode(0xE0)...)) // AC: a run of 2^14 + 14 bits blocks
	blocks := ((w + 7) / 8) * ((h + 7) / 8)
	b.Write([]byte{0xFF, 0xDA, 0, 8, 1, 1, 0x00, 0, 0, 0}) // the DC scan: one bit a block
	b.Write(make([]byte, blocks/8+1))
	var run bytes.Buffer // each run: the code 0, then 14 one bits (32767 blocks), padded with ones
	bits, n := uint64(0), 0
	for range (blocks + 32766) / 32767 {
		bits, n = bits<<15|0x3FFF, n+15
		for n >= 8 {
			c := byte(bits >> (n - 8))
			run.WriteByte(c)
			if c == 0xFF {
				run.WriteByte(0) // stuffed
			}
			n -= 8
		}
	}
	if n > 0 {
		c := byte(bits<<(8-n)) | byte(0xFF>>n)
		run.WriteByte(c)
		if c == 0xFF {
			run.WriteByte(0)
		}
	}
	for range acScans {
		b.Write([]byte{0xFF, 0xDA, 0, 8, 1, 1, 0x00, 1, 63, 0}) // AC, zigzag 1 to 63
		b.Write(run.Bytes())
	}
	b.Write([]byte{0xFF, 0xD9})
	return b.Bytes()
}

// A JPEG of more than 100 scans (fetch.MaxJPEGScans) is refused on its
// header, as not an image we decode: each scan of a progressive JPEG
// costs a pass over every block of the image for a few bytes, so a
// 20 MiB reference of 30 million pixels held a worker's CPU for over an
// hour (12 ms a scan, 53 bytes each), at the price of one task. One of
// ordinary scans still decodes.
func TestJPEGScansBounded(t *testing.T) {
	const w, h = 256, 256
	for _, scans := range []int{10, 100} {
		if _, _, err := fetch.DecodeWithin(scansJPEG(w, h, scans-1), w*h, 64*w*h); err != nil {
			t.Fatalf("a JPEG of %d scans: %v", scans, err)
		}
	}
	for _, scans := range []int{101, 1000} {
		many := scansJPEG(w, h, scans-1)
		if _, _, err := fetch.DecodeConfigWithin(many, w*h, 64*w*h); !errors.Is(err, fetch.ErrNotImage) {
			t.Errorf("DecodeConfigWithin of a JPEG of %d scans (%d bytes): %v, want ErrNotImage", scans, len(many), err)
		}
		if _, _, err := fetch.DecodeWithin(many, w*h, 64*w*h); !errors.Is(err, fetch.ErrNotImage) {
			t.Errorf("DecodeWithin of a JPEG of %d scans: %v, want ErrNotImage", scans, err)
		}
	}
}
