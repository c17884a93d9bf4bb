package fetch

import "image"

// gifDecodedBytes is what image/gif allocates for the first frame of a
// GIF whose header DecodeConfig read as cfg: the frame (1 byte a pixel,
// at most the logical screen, which DecodeConfig reports), and for an
// interlaced frame a second image of its size, into which it puts the
// rows in order. Without a frame found it answers the interlaced size.
func gifDecodedBytes(data []byte, cfg image.Config) int64 {
	px := int64(cfg.Width) * int64(cfg.Height)
	if interlaced, ok := gifFirstFrameInterlaced(data); ok && !interlaced {
		return px
	}
	return 2 * px
}

// gifFirstFrameInterlaced reports whether the first image descriptor of
// a GIF is marked interlaced (ok false when none is found). Each step
// moves past at least one byte, so it ends within len(data) steps.
func gifFirstFrameInterlaced(data []byte) (interlaced, ok bool) {
	const screen = 13 // the header (GIF89a) and the logical screen descriptor
	if len(data) < screen {
		return false, false
	}
	i := screen
	if data[10]&0x80 != 0 {
		i += 3 << (data[10]&7 + 1) // the global colour table
	}
	for i < len(data) {
		switch data[i] {
		case 0x2C: // image descriptor: separator, left, top, width, height, flags
			if i+9 >= len(data) {
				return false, false
			}
			return data[i+9]&0x40 != 0, true
		case 0x21: // extension: introducer, label, then data sub-blocks up to an empty one
			i += 2
			for i < len(data) && data[i] != 0 {
				i += 1 + int(data[i])
			}
			i++
		default: // the trailer, or not a GIF image/gif reads
			return false, false
		}
	}
	return false, false
}
