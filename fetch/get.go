package fetch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	_ "image/gif" // decoders for image.Decode
	_ "image/jpeg"
	_ "image/png"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// checkURL accepts absolute http(s) URLs with a host and no credentials.
func checkURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return ErrBadURL
	}
	if u.User != nil {
		return ErrBadURL
	}
	return nil
}

// Fetch downloads rawURL under the guards and returns its bytes and
// Content-Type.
func (f *Fetcher) Fetch(ctx context.Context, rawURL string) ([]byte, string, error) {
	if err := checkURL(rawURL); err != nil {
		return nil, "", err
	}
	ctx, cancel := context.WithTimeout(ctx, f.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, "", ErrBadURL
	}
	req.Header.Set("User-Agent", f.o.UserAgent)
	req.Header.Set("Accept", "image/png, image/jpeg, image/gif, image/*;q=0.8")
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, "", unwrapURLError(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		return nil, "", fmt.Errorf("%w %d", ErrStatus, resp.StatusCode)
	}
	if resp.ContentLength > f.o.MaxBytes {
		return nil, "", fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, resp.ContentLength, f.o.MaxBytes)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, f.o.MaxBytes+1))
	if err != nil {
		return nil, "", unwrapURLError(err)
	}
	if int64(len(data)) > f.o.MaxBytes {
		return nil, "", fmt.Errorf("%w: more than %d bytes", ErrTooLarge, f.o.MaxBytes)
	}
	return data, resp.Header.Get("Content-Type"), nil
}

// Image fetches rawURL and decodes it as a PNG, JPEG or GIF image after
// checking its size in pixels from the header. It returns the image and
// its format ("png", "jpeg", "gif").
func (f *Fetcher) Image(ctx context.Context, rawURL string) (image.Image, string, error) {
	data, _, err := f.Fetch(ctx, rawURL)
	if err != nil {
		return nil, "", err
	}
	return f.Decode(data)
}

// Decode decodes image bytes under the pixel limit.
func (f *Fetcher) Decode(data []byte) (image.Image, string, error) {
	cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return nil, "", ErrNotImage
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return nil, "", ErrNotImage
	}
	if px := int64(cfg.Width) * int64(cfg.Height); px > f.o.MaxPixels {
		return nil, "", fmt.Errorf("%w: %dx%d, at most %d pixels", ErrTooManyPixels, cfg.Width, cfg.Height, f.o.MaxPixels)
	}
	img, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, "", ErrNotImage
	}
	return img, format, nil
}

// unwrapURLError keeps our sentinels visible through *url.Error and
// drops the URL from the message.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	for _, s := range []error{ErrBlockedAddress, ErrTooManyRedirects, ErrBadURL, context.DeadlineExceeded, context.Canceled} {
		if errors.Is(err, s) {
			return fmt.Errorf("%w", s)
		}
	}
	if strings.Contains(err.Error(), "timeout") {
		return fmt.Errorf("could not be downloaded: %w", context.DeadlineExceeded)
	}
	return fmt.Errorf("could not be downloaded: %w", err)
}
