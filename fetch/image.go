package fetch

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	_ "image/gif" // registers the decoders image.Decode uses
	_ "image/jpeg"
	_ "image/png"
)

// Image fetches rawURL and decodes it as a PNG, JPEG or GIF image after
// checking its size in pixels on the header. It returns the image and
// its format ("png", "jpeg" or "gif").
func (f *Fetcher) Image(ctx context.Context, rawURL string) (image.Image, string, error) {
	data, _, err := f.Fetch(ctx, rawURL)
	if err != nil {
		return nil, "", err
	}
	return f.Decode(data)
}

// Decode decodes PNG, JPEG or GIF bytes under the pixel and decoded-size
// limits, which it checks on the header (DecodeConfig) before decoding.
func (f *Fetcher) Decode(data []byte) (image.Image, string, error) {
	if _, _, err := f.DecodeConfig(data); err != nil {
		return nil, "", err
	}
	img, format, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, "", fmt.Errorf("%w: %w", ErrNotImage, err)
	}
	return img, format, nil
}

// DecodeConfig reads the header of PNG, JPEG or GIF bytes and checks it
// as Decode would, without decoding the pixels: at most MaxPixels, and at
// most MaxDecodedBytes once decoded (a 16-bit PNG takes 8 bytes a pixel,
// an 8-bit RGBA one 4).
func (f *Fetcher) DecodeConfig(data []byte) (image.Config, string, error) {
	cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return cfg, "", fmt.Errorf("%w: %w", ErrNotImage, err)
	}
	switch format {
	case "png", "jpeg", "gif":
	default: // a decoder another package registered
		return cfg, "", fmt.Errorf("%w: format %q", ErrNotImage, format)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return cfg, "", fmt.Errorf("%w: empty image", ErrNotImage)
	}
	px := int64(cfg.Width) * int64(cfg.Height)
	if px > f.o.MaxPixels {
		return cfg, "", fmt.Errorf("%w: %dx%d, at most %d pixels", ErrTooManyPixels, cfg.Width, cfg.Height, f.o.MaxPixels)
	}
	if size := px * bytesPerPixel(cfg.ColorModel); size > f.o.MaxDecodedBytes {
		return cfg, "", fmt.Errorf("%w: %dx%d decodes to %d MB, at most %d MB", ErrTooManyPixels, cfg.Width, cfg.Height, size>>20, f.o.MaxDecodedBytes>>20)
	}
	return cfg, format, nil
}

// bytesPerPixel is what image.Decode allocates per pixel for an image of
// model m (JPEG's YCbCr is counted as 4, above what any subsampling
// takes).
func bytesPerPixel(m color.Model) int64 {
	switch m {
	case color.GrayModel, color.AlphaModel:
		return 1
	case color.Gray16Model, color.Alpha16Model:
		return 2
	case color.YCbCrModel, color.NYCbCrAModel:
		return 4
	case color.RGBAModel, color.NRGBAModel, color.CMYKModel:
		return 4
	case color.RGBA64Model, color.NRGBA64Model:
		return 8
	}
	if _, ok := m.(color.Palette); ok {
		return 1
	}
	return 8 // unknown: assume the widest
}
