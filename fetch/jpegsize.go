package fetch

import (
	"image"
	"image/color"
)

// jpegDecodedBytes is what image/jpeg allocates to decode a JPEG whose
// header DecodeConfig read as cfg: every component's plane of the
// padded image (whole blocks), the RGBA or CMYK image it converts an RGB
// or four-component JPEG to, and for a progressive JPEG the coefficients
// of every block (256 bytes a block, 4 bytes a pixel per component at full
// resolution), kept between its scans. A small progressive CMYK file may
// name an image that takes 24 bytes a pixel to decode. f and ok are
// jpegFrameOf(data); without a frame header found, it answers the most
// any JPEG takes a pixel.
func jpegDecodedBytes(f jpegFrame, ok bool, cfg image.Config) int64 {
	if !ok {
		return worstJPEGBytesPerPixel * int64(cfg.Width) * int64(cfg.Height)
	}
	h0, v0 := 1, 1 // image/jpeg samples a single component 1×1 whatever it says
	if len(f.sampling) > 1 {
		h0, v0 = f.sampling[0][0], f.sampling[0][1]
	}
	mxx := int64((f.width + 8*h0 - 1) / (8 * h0)) // MCUs across and down
	myy := int64((f.height + 8*v0 - 1) / (8 * v0))
	padded := 8 * int64(h0) * mxx * 8 * int64(v0) * myy
	n := int64(len(f.sampling)) * padded // Y, Cb, Cr and black planes, or gray
	if len(f.sampling) == 4 || cfg.ColorModel == color.RGBAModel {
		n += 4 * padded // converted to CMYK or RGBA
	}
	if f.progressive {
		for _, hv := range f.sampling {
			h, v := hv[0], hv[1]
			if len(f.sampling) == 1 {
				h, v = 1, 1
			}
			n += 256 * mxx * myy * int64(h) * int64(v)
		}
	}
	return n
}

// worstJPEGBytesPerPixel is the most image/jpeg allocates a pixel: a
// progressive CMYK image, 4 planes, 4 bytes of CMYK and 16 of
// coefficients.
const worstJPEGBytesPerPixel = 24

// MaxJPEGScans is the most scans DecodeWithin decodes in a JPEG: on
// each scan of a progressive JPEG image/jpeg goes through every block of
// the image, and a scan that skips all its blocks takes a few bytes, so
// a 20 MiB file of hundreds of thousands of them would hold a worker's
// CPU for hours. Encoders write about 10 (libjpeg's progressive script:
// 10 for colour, 6 for gray; a baseline JPEG has one a component at
// most).
const MaxJPEGScans = 100

// jpegFrame is what a JPEG's frame header (SOF) says about its size, and
// how many scans (SOS) follow it.
type jpegFrame struct {
	progressive   bool
	width, height int
	sampling      [][2]int // each component's horizontal and vertical sampling factors
	scans         int
}

// jpegFrameOf finds the frame header of a JPEG and counts its scans,
// walking its segments as image/jpeg does (skipping fill bytes, and stray
// data between them, as a scan's entropy-coded data is to this walk). ok
// is false when there is no frame header before the first scan.
func jpegFrameOf(data []byte) (f jpegFrame, ok bool) {
	if len(data) < 2 || data[0] != 0xFF || data[1] != 0xD8 {
		return f, false
	}
	for i := 2; i+1 < len(data); {
		if data[i] != 0xFF {
			i++ // stray data between segments, or a scan's data
			continue
		}
		marker := data[i+1]
		i += 2
		for marker == 0xFF && i < len(data) { // fill bytes
			marker, i = data[i], i+1
		}
		switch {
		case marker == 0x00 || marker == 0xFF || 0xD0 <= marker && marker <= 0xD7:
			continue // an escaped 0xFF, or a restart marker: no length follows
		case marker == 0xD9: // the end
			return f, ok
		}
		if i+2 > len(data) {
			return f, ok
		}
		n := int(data[i])<<8 | int(data[i+1])
		if n < 2 || i+n > len(data) {
			return f, ok
		}
		seg := data[i+2 : i+n]
		i += n
		switch marker {
		case 0xDA:
			if !ok { // a scan before any frame
				return f, false
			}
			f.scans++
		case 0xC0, 0xC1, 0xC2:
			if ok { // image/jpeg refuses a second frame
				continue
			}
			if len(seg) < 6 || len(seg) != 6+3*int(seg[5]) {
				return f, false
			}
			f.progressive = marker == 0xC2
			f.height = int(seg[1])<<8 | int(seg[2])
			f.width = int(seg[3])<<8 | int(seg[4])
			for c := range int(seg[5]) {
				hv := seg[7+3*c]
				f.sampling = append(f.sampling, [2]int{max(int(hv>>4), 1), max(int(hv&0x0F), 1)})
			}
			ok = true
		}
	}
	return f, ok
}
