package provider

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/draw"
	_ "image/gif" // decoders for image.Decode and image.DecodeConfig
	_ "image/jpeg"
	"image/png"
	"net/http"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/fetch"
)

// MaxCropPixels bounds the images CropToRatio decodes, and
// MaxCropDecodedBytes the memory they take decoded (a 16-bit PNG takes
// 8 bytes a pixel, an 8-bit RGBA one 4), both checked on the header: a
// provider's few hundred bytes may name an image that image.Decode
// would allocate whole before finding the data short.
const (
	MaxCropPixels       = 100_000_000
	MaxCropDecodedBytes = 4 * MaxCropPixels
)

// ErrUnknownFormat: the bytes are not an image the standard library
// decodes (PNG, JPEG, GIF). WebP is such a format.
var ErrUnknownFormat = errors.New("not a PNG, JPEG or GIF image")

// ImageSize reads the size of a PNG, JPEG or GIF image from its header.
// It returns ErrUnknownFormat for anything else (WebP included).
func ImageSize(data []byte) (Size, error) {
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return Size{}, fmt.Errorf("%w: %w", ErrUnknownFormat, err)
	}
	return Size{cfg.Width, cfg.Height}, nil
}

// CropToRatio centre-crops img to exactly ratio r (CropSize) and
// re-encodes it as PNG, keeping its Seed; it reports whether it changed anything. An
// image already of ratio r, a ratio that is not concrete (auto), and a
// format the standard library cannot decode (WebP: ErrUnknownFormat is
// not returned, the image is kept as it is) come back unchanged.
func CropToRatio(img imagegen.GeneratedImage, r imagegen.AspectRatio) (imagegen.GeneratedImage, bool, error) {
	if w, _ := r.Size(); w == 0 {
		return img, false, nil
	}
	size, err := ImageSize(img.Data)
	if ct := ContentType(img.Data); err != nil || ct != PNG && ct != JPEG && ct != GIF {
		return img, false, nil // cannot crop what we cannot decode (a decoder another package registered included)
	}
	if size.Is(r) {
		return img, false, nil
	}
	src, _, err := fetch.DecodeWithin(img.Data, MaxCropPixels, MaxCropDecodedBytes)
	if err != nil {
		if errors.Is(err, fetch.ErrTooManyPixels) {
			return img, false, fmt.Errorf("image of %v is too large to crop: %w", size, err)
		}
		return img, false, fmt.Errorf("decoding the image: %w", err)
	}
	b := src.Bounds()
	c := CropSize(b.Dx(), b.Dy(), r)
	x0 := b.Min.X + (b.Dx()-c.W)/2
	y0 := b.Min.Y + (b.Dy()-c.H)/2
	rect := image.Rect(x0, y0, x0+c.W, y0+c.H)
	var cropped image.Image
	if s, ok := src.(interface {
		SubImage(image.Rectangle) image.Image
	}); ok {
		cropped = s.SubImage(rect)
	} else {
		dst := image.NewRGBA(image.Rect(0, 0, c.W, c.H))
		draw.Draw(dst, dst.Bounds(), src, rect.Min, draw.Src)
		cropped = dst
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, cropped); err != nil {
		return img, false, fmt.Errorf("encoding the cropped image: %w", err)
	}
	img.ContentType, img.Data = "image/png", buf.Bytes() // the rest (the seed) stays
	return img, true, nil
}

// ContentType names the image format of data from its first bytes
// (image/png, image/jpeg, image/gif, image/webp, ...), or "" when it is
// not an image format net/http knows.
func ContentType(data []byte) string {
	ct := http.DetectContentType(data)
	if len(ct) > 6 && ct[:6] == "image/" {
		return ct
	}
	return ""
}
