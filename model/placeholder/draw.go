package placeholder

import (
	"crypto/sha256"
	"encoding/binary"
	"image"
)

// palette is what a prompt decides about its picture.
type palette struct {
	from, to [3]uint8 // gradient corners
	shape    [3]uint8 // colour of the rings and bars
	seed     [32]byte // places and sizes of the shapes
}

// paletteOf hashes the prompt, and the seed when there is one, so that
// another seed gives another picture of the same prompt.
func paletteOf(prompt string, seed *int64) palette {
	h := sha256.New()
	h.Write([]byte(prompt))
	if seed != nil {
		h.Write(binary.BigEndian.AppendUint64([]byte{0}, uint64(*seed)))
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return palette{
		from:  [3]uint8{sum[0], sum[1], sum[2]},
		to:    [3]uint8{sum[3], sum[4], sum[5]},
		shape: [3]uint8{255 - sum[0], 255 - sum[1], 255 - sum[2]},
		seed:  sum,
	}
}

// draw paints the picture without its references: a diagonal gradient,
// three rings and three bars from the hash of the prompt and the seed.
// The references go on top as tiles along the bottom third (tileOf).
func draw(prompt string, seed *int64, w, h int) *image.NRGBA {
	p := paletteOf(prompt, seed)
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	gradient(img, p.from, p.to)
	short := min(w, h)
	for i := range 3 {
		cx, cy := int(p.seed[6+i])*w/256, int(p.seed[9+i])*h/256
		r := short/8 + int(p.seed[12+i])*short/1024
		ring(img, cx, cy, r, max(2, short/64), p.shape)
		bx := int(p.seed[15+i]) * w / 256
		blend(img, image.Rect(bx, 0, bx+max(2, w/64), h), p.shape, 96)
	}
	return img
}

// gradient fills img from colour a (top left) to b (bottom right). The
// w+h-1 diagonal colours are computed once.
func gradient(img *image.NRGBA, a, b [3]uint8) {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	span := max(1, w+h-2)
	diag := make([]byte, 4*(w+h-1))
	for d := range w + h - 1 {
		t := d * 255 / span
		for c := range 3 {
			diag[4*d+c] = uint8((int(a[c])*(255-t) + int(b[c])*t) / 255)
		}
		diag[4*d+3] = 255
	}
	for y := range h {
		copy(img.Pix[y*img.Stride:y*img.Stride+4*w], diag[4*y:])
	}
}

// ring draws a circle outline of the given thickness.
func ring(img *image.NRGBA, cx, cy, r, thick int, c [3]uint8) {
	outer, inner := r*r, (r-thick)*(r-thick)
	b := img.Rect.Intersect(image.Rect(cx-r, cy-r, cx+r+1, cy+r+1))
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if d := (x-cx)*(x-cx) + (y-cy)*(y-cy); d <= outer && d >= inner {
				o := img.PixOffset(x, y)
				copy(img.Pix[o:o+3], c[:])
			}
		}
	}
}

// blend mixes colour c into rect r with alpha 0 to 255.
func blend(img *image.NRGBA, r image.Rectangle, c [3]uint8, alpha int) {
	r = r.Intersect(img.Rect)
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			o := img.PixOffset(x, y)
			for k := range 3 {
				img.Pix[o+k] = uint8((int(img.Pix[o+k])*(255-alpha) + int(c[k])*alpha) / 255)
			}
		}
	}
}

// tiles draws the reference images side by side along the bottom third,
// each scaled to fit its tile.
// tileOf is where reference i of n goes: a strip of n tiles along the
// bottom third of img.
func tileOf(img *image.NRGBA, i, n int) image.Rectangle {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	tileW, tileH := max(1, w/n), max(1, h/3)
	return image.Rect(i*tileW, h-tileH, (i+1)*tileW, h).Inset(max(1, tileH/16))
}

// scaleInto draws src into dst by nearest neighbour, keeping src's ratio
// and blending its transparency over what is there.
func scaleInto(img *image.NRGBA, dst image.Rectangle, src image.Image) {
	sb := src.Bounds()
	if sb.Empty() || dst.Empty() {
		return
	}
	dw, dh := dst.Dx(), dst.Dy()
	if sb.Dx()*dh > sb.Dy()*dw {
		dh = max(1, sb.Dy()*dw/sb.Dx())
	} else {
		dw = max(1, sb.Dx()*dh/sb.Dy())
	}
	cols := make([]int, dw)
	for x := range cols {
		cols[x] = sb.Min.X + x*sb.Dx()/dw
	}
	for y := range dh {
		sy := sb.Min.Y + y*sb.Dy()/dh
		o := img.PixOffset(dst.Min.X, dst.Min.Y+y)
		for _, sx := range cols {
			r, g, b, a := src.At(sx, sy).RGBA() // alpha-premultiplied, 16 bits
			px := img.Pix[o : o+3]
			for k, v := range [3]uint32{r, g, b} {
				px[k] = uint8((v + uint32(px[k])*257*(0xffff-a)/0xffff) >> 8)
			}
			o += 4
		}
	}
}
