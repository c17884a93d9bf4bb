package imagegen

import (
	"mime"
	"net/http"

	"github.com/imagegen/imagegen/internal/bmff"
)

// SafeImageType is contentType's bare media type (lowercased, without
// parameters) and whether it is a type the service stores and serves
// as an image: image/png, image/jpeg, image/webp, image/gif,
// image/avif, image/heic or image/heif. Browsers show these as
// pictures and run nothing in them. Every other type is refused, and
// "" returned: image/svg+xml and text/html, which a browser opens as a
// document of the image's origin, scripts and all; types no model
// makes and no client expects (image/bmp, whose signature is two
// letters that plain text can start with; image/x-icon, image/tiff); and
// anything mime.ParseMediaType cannot parse. The worker stores a
// model's images under this type (or the one their bytes show), and
// the image endpoint serves as an attachment any record whose type is
// not safe.
func SafeImageType(contentType string) (string, bool) {
	if safeBareType(contentType) { // as stored: nothing to parse
		return contentType, true
	}
	mt, _, err := mime.ParseMediaType(contentType) // lowercased
	if err != nil || !safeBareType(mt) {
		return "", false
	}
	return mt, true
}

// safeBareType reports whether mt, a bare lowercase media type, is one
// of SafeImageType's.
func safeBareType(mt string) bool {
	switch mt {
	case "image/png", "image/jpeg", "image/webp", "image/gif", "image/avif", "image/heic", "image/heif":
		return true
	}
	return false
}

// sniffImageType is the type of the image data is, from its first
// bytes, when that is a safe one (SafeImageType); "" otherwise.
// net/http tells PNG, JPEG, GIF and WebP; AVIF, HEIC and HEIF are read
// from the major brand of the ISO BMFF ftyp box they start with.
func sniffImageType(data []byte) string {
	if ct := bmff.ImageType(data); ct != "" {
		return ct
	}
	ct, ok := SafeImageType(http.DetectContentType(data))
	if !ok {
		return ""
	}
	return ct
}
