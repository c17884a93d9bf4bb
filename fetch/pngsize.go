package fetch

import (
	"bytes"
	"encoding/binary"
	"image"
)

// pngDecodedBytes is what image/png allocates for the pixels of a PNG
// whose header DecodeConfig read as cfg. DecodeConfig stops at the
// header and reports a gray image's model (1 or 2 bytes a pixel), but a
// tRNS chunk after it makes image/png decode a gray PNG to NRGBA or a
// 16-bit gray one to NRGBA64 (4 or 8 bytes a pixel), so the chunks up to
// the first IDAT are looked through for one. An interlaced (Adam7) PNG
// takes twice: image/png decodes each of its seven passes into an image
// of its own, which it then merges into the whole; beside the image it
// holds two raw rows (pngRowBytes). Without a header found it answers
// the most image/png takes a pixel.
func pngDecodedBytes(data []byte, cfg image.Config) int64 {
	px := int64(cfg.Width) * int64(cfg.Height)
	const sig = "\x89PNG\r\n\x1a\n"
	// The signature, then IHDR: length, type, width, height, depth,
	// colour type, compression, filter and interlace methods.
	if len(data) < len(sig)+8+13 || !bytes.HasPrefix(data, []byte(sig)) || string(data[12:16]) != "IHDR" {
		return 2 * 8 * px
	}
	depth, colorType, interlace := data[24], data[25], data[28]
	n := px * bytesPerPixel(cfg.ColorModel)
	if colorType == 0 && pngHasTRNS(data[len(sig):]) { // gray with a transparent colour
		n = 4 * px // NRGBA
		if depth == 16 {
			n = 8 * px // NRGBA64
		}
	}
	if interlace != 0 {
		n *= 2
	}
	return n + pngRowBytes(cfg, colorType, depth, interlace != 0)
}

// adam7 is each interlace pass's x and y offset and step.
var adam7 = [7][4]int64{{0, 0, 8, 8}, {4, 0, 8, 8}, {0, 4, 4, 8}, {2, 0, 4, 4}, {0, 2, 2, 4}, {1, 0, 2, 2}, {0, 1, 1, 2}}

// pngRowBytes is what image/png allocates beside the image: two rows of
// the raw image (the current one and the one before it, for the
// filters), each with its filter byte, for each pass, beyond
// pngRowAllowance. For an image one pixel high they are twice the image,
// which the pixels alone do not count.
func pngRowBytes(cfg image.Config, colorType, depth byte, interlaced bool) int64 {
	channels := map[byte]int64{0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[colorType]
	if channels == 0 || depth == 0 {
		channels, depth = 4, 16 // not a type image/png decodes: the widest
	}
	rows := func(width int64) int64 { return 2 * (1 + (width*channels*int64(depth)+7)/8) }
	w, h := int64(cfg.Width), int64(cfg.Height)
	n := rows(w)
	if interlaced {
		n = 0
		for _, p := range adam7 {
			pw, ph := (w-p[0]+p[2]-1)/p[2], (h-p[1]+p[3]-1)/p[3]
			if pw > 0 && ph > 0 {
				n += rows(pw)
			}
		}
	}
	return max(0, n-pngRowAllowance)
}

// pngRowAllowance is how much of the rows pngRowBytes leaves uncounted,
// with the decoder's other small buffers (zlib's window, its tables):
// the rows of any image of an ordinary shape (an 8-bit RGBA row of
// 65 536 pixels takes 256 KiB), so that an image within MaxPixels still
// fits MaxDecodedBytes; only a pathologically wide one is counted.
const pngRowAllowance = 512 << 10

// pngHasTRNS reports whether chunks (a PNG after its signature) hold a
// tRNS chunk before the first IDAT. Each step moves past one chunk, so
// it ends within len(chunks)/12 steps.
func pngHasTRNS(chunks []byte) bool {
	for len(chunks) >= 8 {
		n := uint64(binary.BigEndian.Uint32(chunks))
		switch string(chunks[4:8]) {
		case "tRNS":
			return true
		case "IDAT":
			return false
		}
		next := 12 + n // length, type, data, CRC
		if next > uint64(len(chunks)) {
			return false
		}
		chunks = chunks[next:]
	}
	return false
}
