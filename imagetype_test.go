package imagegen_test

import (
	"testing"

	"github.com/imagegen/imagegen"
)

// SafeImageType keeps the raster types browsers show inertly, as bare
// lowercase media types, and refuses every other (documents that run
// scripts, types no model makes, what does not parse).
func TestSafeImageType(t *testing.T) {
	for in, want := range map[string]string{
		"image/png":                "image/png",
		"IMAGE/PNG; charset=x":     "image/png",
		"image/jpeg":               "image/jpeg",
		" image/webp ":             "image/webp",
		"image/gif":                "image/gif",
		"image/avif":               "image/avif",
		"image/heic":               "image/heic",
		"image/heif":               "image/heif",
		"image/svg+xml":            "",
		"image/svg+xml; charset=x": "",
		"text/html":                "",
		"text/html; charset=utf-8": "",
		"application/xhtml+xml":    "",
		"application/octet-stream": "",
		"image/bmp":                "",
		"image/x-icon":             "",
		"image/tiff":               "",
		"image/*":                  "",
		"image":                    "",
		"image/png; =":             "",
		"image/png\r\nX-Evil: 1":   "",
		"":                         "",
	} {
		got, ok := imagegen.SafeImageType(in)
		if got != want || ok != (want != "") {
			t.Errorf("SafeImageType(%q) = %q, %v; want %q, %v", in, got, ok, want, want != "")
		}
	}
}
