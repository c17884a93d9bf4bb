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
// of its own, which it then merges into the whole. Without a header
// found it answers the most image/png takes a pixel.
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
	return n
}

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
