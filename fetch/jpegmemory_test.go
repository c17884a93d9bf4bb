package fetch_test

import (
	"bytes"
	"fmt"
	"testing"
)

// jpegShape is a crafted JPEG's: its components (1 gray, 3 YCbCr or RGB,
// 4 CMYK), whether its luma (and black) is sampled 2×2 (4:2:0), whether it is
// progressive, and whether Adobe's marker says RGB (3 components).
type jpegShape struct {
	nComp                 int
	subsampled, prog, rgb bool
}

// craftedJPEG is a w×h JPEG of that shape whose every block is flat: a
// few bits a block, so a small file that names a large image and makes
// image/jpeg fill every block. A progressive one (one DC scan) is decoded
// through a buffer of every block's coefficients (256 bytes a block) kept
// between scans.
func craftedJPEG(w, h int, s jpegShape) []byte {
	var b bytes.Buffer
	b.Write([]byte{0xFF, 0xD8})
	if s.nComp == 4 || s.rgb {
		b.Write([]byte{0xFF, 0xEE, 0, 14, 'A', 'd', 'o', 'b', 'e', 0, 100, 0, 0, 0, 0, 0}) // transform 0: CMYK or RGB
	}
	b.Write([]byte{0xFF, 0xDB, 0, 67, 0})
	b.Write(bytes.Repeat([]byte{1}, 64))
	sof := byte(0xC0)
	if s.prog {
		sof = 0xC2
	}
	b.Write([]byte{0xFF, sof, 0, byte(8 + 3*s.nComp), 8, byte(h >> 8), byte(h), byte(w >> 8), byte(w), byte(s.nComp)})
	mcuSide, blocksPerMCU := 8, 0
	for i := range s.nComp {
		hv, blocks := byte(0x11), 1
		if s.subsampled && (i == 0 || i == 3) { // image/jpeg samples black as luma
			hv, mcuSide, blocks = 0x22, 16, 4
		}
		b.Write([]byte{byte(i + 1), hv, 0})
		blocksPerMCU += blocks
	}
	oneCode := []byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0} // one code of one bit, for the value 0
	b.Write(append([]byte{0xFF, 0xC4, 0, 20, 0x00}, oneCode...))         // DC: a difference of 0
	b.Write(append([]byte{0xFF, 0xC4, 0, 20, 0x10}, oneCode...))         // AC: end of block
	b.Write([]byte{0xFF, 0xDA, 0, byte(6 + 2*s.nComp), byte(s.nComp)})
	for i := range s.nComp {
		b.Write([]byte{byte(i + 1), 0x00})
	}
	bitsPerBlock := 2 // DC and end of block
	if s.prog {
		b.Write([]byte{0, 0, 0}) // the DC scan only
		bitsPerBlock = 1
	} else {
		b.Write([]byte{0, 63, 0})
	}
	mcus := ((w + mcuSide - 1) / mcuSide) * ((h + mcuSide - 1) / mcuSide)
	b.Write(make([]byte, bitsPerBlock*blocksPerMCU*mcus/8+1))
	b.Write([]byte{0xFF, 0xD9})
	return b.Bytes()
}

// An image DecodeWithin accepts under a decoded-size limit takes no more
// than that limit to decode: the limit is what bounds a worker's memory
// (README, "Memory per task"), and the header check stands for the
// decoder's allocations. A progressive JPEG took 15 bytes a pixel (5 for
// gray, 24 for CMYK), a CMYK one 8 and an RGB one 7, where 4 (gray 1)
// were counted: a
// reference of a few hundred KiB that named 40 million pixels passed the
// 160 MB check and made the worker allocate up to 960 MB.
func TestDecodedJPEGStaysWithinLimit(t *testing.T) {
	const w, h = 1024, 1024
	const px = w * h
	var shapes []jpegShape
	for _, prog := range []bool{false, true} {
		shapes = append(shapes, jpegShape{nComp: 1, prog: prog}, jpegShape{nComp: 3, prog: prog},
			jpegShape{nComp: 3, subsampled: true, prog: prog}, jpegShape{nComp: 3, rgb: true, prog: prog},
			jpegShape{nComp: 4, prog: prog}, jpegShape{nComp: 4, subsampled: true, prog: prog})
	}
	for _, shape := range shapes {
		t.Run(fmt.Sprintf("%+v", shape), func(t *testing.T) {
			decodesWithinLimit(t, craftedJPEG(w, h, shape), px, 1, 3, 4, 5, 8, 12, 15, 16, 20, 24, 32)
		})
	}
}
