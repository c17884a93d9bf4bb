package placeholder

import (
	"bytes"
	"crypto/sha256"
	"image"
	"image/png"
)

// palette is what a prompt decides about its picture.
type palette struct {
	from, to [3]uint8 // gradient corners
	shape    [3]uint8 // shape colour
	seed     [32]byte // places of the shapes
}

func paletteOf(prompt string) palette {
	sum := sha256.Sum256([]byte(prompt))
	return palette{
		from:  [3]uint8{sum[0], sum[1], sum[2]},
		to:    [3]uint8{sum[3], sum[4], sum[5]},
		shape: [3]uint8{255 - sum[0], 255 - sum[1], 255 - sum[2]},
		seed:  sum,
	}
}

// draw paints the picture: a diagonal gradient, rings and bars from the
// prompt's hash, and the reference images as tiles along the bottom.
func draw(prompt string, w, h int, refs []image.Image) *image.NRGBA {
	p := paletteOf(prompt)
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	span := w + h - 2
	if span == 0 {
		span = 1
	}
	for y := 0; y < h; y++ {
		row := img.Pix[y*img.Stride:]
		for x := 0; x < w; x++ {
			t := (x + y) * 255 / span
			o := x * 4
			for c := 0; c < 3; c++ {
				row[o+c] = uint8((int(p.from[c])*(255-t) + int(p.to[c])*t) / 255)
			}
			row[o+3] = 255
		}
	}
	// Three rings and three bars, placed by the hash.
	short := min(w, h)
	for i := 0; i < 3; i++ {
		cx, cy := int(p.seed[6+i])*w/256, int(p.seed[9+i])*h/256
		r := short/8 + int(p.seed[12+i])*short/1024
		ring(img, cx, cy, r, max(2, short/64), p.shape)
		bx := int(p.seed[15+i]) * w / 256
		fill(img, image.Rect(bx, 0, bx+max(2, w/64), h), p.shape, 96)
	}
	if len(refs) > 0 {
		tiles(img, refs)
	}
	return img
}

// ring draws a circle outline of the given thickness.
func ring(img *image.NRGBA, cx, cy, r, thick int, c [3]uint8) {
	outer, inner := r*r, (r-thick)*(r-thick)
	b := img.Bounds().Intersect(image.Rect(cx-r, cy-r, cx+r+1, cy+r+1))
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			d := (x-cx)*(x-cx) + (y-cy)*(y-cy)
			if d <= outer && d >= inner {
				o := img.PixOffset(x, y)
				img.Pix[o], img.Pix[o+1], img.Pix[o+2] = c[0], c[1], c[2]
			}
		}
	}
}

// fill blends colour c over rect r with the given alpha (0 to 255).
func fill(img *image.NRGBA, r image.Rectangle, c [3]uint8, alpha int) {
	r = r.Intersect(img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			o := img.PixOffset(x, y)
			for k := 0; k < 3; k++ {
				img.Pix[o+k] = uint8((int(img.Pix[o+k])*(255-alpha) + int(c[k])*alpha) / 255)
			}
		}
	}
}

// tiles draws the reference images, scaled to fit, side by side along
// the bottom third of the picture.
func tiles(img *image.NRGBA, refs []image.Image) {
	w, h := img.Bounds().Dx(), img.Bounds().Dy()
	tileH := max(1, h/3)
	tileW := max(1, w/len(refs))
	for i, ref := range refs {
		area := image.Rect(i*tileW, h-tileH, (i+1)*tileW, h)
		scaleInto(img, area.Inset(max(1, tileH/16)), ref)
	}
}

// scaleInto draws src into dst (nearest neighbour), keeping its ratio.
func scaleInto(img *image.NRGBA, dst image.Rectangle, src image.Image) {
	sb := src.Bounds()
	if sb.Empty() || dst.Empty() {
		return
	}
	// Fit src's ratio inside dst.
	dw, dh := dst.Dx(), dst.Dy()
	if sb.Dx()*dh > sb.Dy()*dw {
		dh = max(1, sb.Dy()*dw/sb.Dx())
	} else {
		dw = max(1, sb.Dx()*dh/sb.Dy())
	}
	for y := 0; y < dh; y++ {
		sy := sb.Min.Y + y*sb.Dy()/dh
		for x := 0; x < dw; x++ {
			sx := sb.Min.X + x*sb.Dx()/dw
			r, g, b, _ := src.At(sx, sy).RGBA()
			o := img.PixOffset(dst.Min.X+x, dst.Min.Y+y)
			img.Pix[o], img.Pix[o+1], img.Pix[o+2], img.Pix[o+3] = uint8(r>>8), uint8(g>>8), uint8(b>>8), 255
		}
	}
}

func encodePNG(img image.Image) ([]byte, error) {
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(&buf, img); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
