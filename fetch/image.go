package fetch

import (
	"bytes"
	"context"
	"fmt"
	"image"
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

// Decode decodes PNG, JPEG or GIF bytes under the pixel limit, which it
// checks on the header before decoding.
func (f *Fetcher) Decode(data []byte) (image.Image, string, error) {
	cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return nil, "", fmt.Errorf("%w: %w", ErrNotImage, err)
	}
	switch format {
	case "png", "jpeg", "gif":
	default: // a decoder another package registered
		return nil, "", fmt.Errorf("%w: format %q", ErrNotImage, format)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return nil, "", fmt.Errorf("%w: empty image", ErrNotImage)
	}
	if px := int64(cfg.Width) * int64(cfg.Height); px > f.o.MaxPixels {
		return nil, "", fmt.Errorf("%w: %dx%d, at most %d pixels", ErrTooManyPixels, cfg.Width, cfg.Height, f.o.MaxPixels)
	}
	img, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, "", fmt.Errorf("%w: %w", ErrNotImage, err)
	}
	return img, format, nil
}
