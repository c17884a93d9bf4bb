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

// Decode decodes PNG, JPEG or GIF bytes under the fetcher's pixel and
// decoded-size limits (MaxPixels, MaxDecodedBytes), which it checks on
// the header before decoding.
func (f *Fetcher) Decode(data []byte) (image.Image, string, error) {
	return DecodeWithin(data, f.o.MaxPixels, f.o.MaxDecodedBytes)
}

// DecodeConfig reads the header of PNG, JPEG or GIF bytes and checks it
// as Decode would, without decoding the pixels.
func (f *Fetcher) DecodeConfig(data []byte) (image.Config, string, error) {
	return DecodeConfigWithin(data, f.o.MaxPixels, f.o.MaxDecodedBytes)
}

// DecodeWithin decodes PNG, JPEG or GIF bytes of at most maxPixels
// pixels that take at most maxDecodedBytes once decoded, checking both
// on the header (DecodeConfigWithin) before it decodes anything: a few
// hundred bytes of JPEG can name an image of a hundred million pixels,
// which image.Decode would allocate whole before finding the data short.
// For bytes from a Fetcher, its Decode applies the limits it was
// configured with; DefaultMaxPixels and DefaultMaxDecodedBytes are the
// defaults.
func DecodeWithin(data []byte, maxPixels, maxDecodedBytes int64) (image.Image, string, error) {
	if _, _, err := DecodeConfigWithin(data, maxPixels, maxDecodedBytes); err != nil {
		return nil, "", err
	}
	img, format, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, "", fmt.Errorf("%w: %w", ErrNotImage, err)
	}
	return img, format, nil
}

// DecodeConfigWithin reads the header of PNG, JPEG or GIF bytes and
// checks it as DecodeWithin would: at most maxPixels, and at most
// maxDecodedBytes once decoded (a 16-bit PNG takes 8 bytes a pixel, an
// 8-bit RGBA one 4, a gray one with a transparent colour (tRNS), which
// image/png decodes to NRGBA or NRGBA64, 4 or 8; an interlaced PNG
// twice that, its passes decoded apart before they are merged; a PNG
// so wide that the two raw rows image/png holds beside it pass 512 KiB,
// those rows too; an interlaced GIF 2, image/gif putting its rows in
// order in a second image).
func DecodeConfigWithin(data []byte, maxPixels, maxDecodedBytes int64) (image.Config, string, error) {
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
	if px > maxPixels {
		return cfg, "", fmt.Errorf("%w: %dx%d, at most %d pixels", ErrTooManyPixels, cfg.Width, cfg.Height, maxPixels)
	}
	size := px * bytesPerPixel(cfg.ColorModel)
	if format == "jpeg" {
		f, ok := jpegFrameOf(data)
		if f.scans > MaxJPEGScans {
			return cfg, "", fmt.Errorf("%w: a JPEG of %d scans, at most %d", ErrNotImage, f.scans, MaxJPEGScans)
		}
		size = max(size, jpegDecodedBytes(f, ok, cfg))
	}
	switch format {
	case "png":
		size = max(size, pngDecodedBytes(data, cfg))
	case "gif":
		size = max(size, gifDecodedBytes(data, cfg))
	}
	if size > maxDecodedBytes {
		return cfg, "", fmt.Errorf("%w: %dx%d decodes to %d MB, at most %d MB", ErrTooManyPixels, cfg.Width, cfg.Height, size>>20, maxDecodedBytes>>20)
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
