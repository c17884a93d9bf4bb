package provider

import (
	"errors"
	"fmt"

	"github.com/imagegen/imagegen/internal/bmff"
)

// ErrNotReferenceImage: a fetched reference's bytes are not an image
// of a kind a reference may be (ReferenceType), whatever type the
// server that sent it declared.
var ErrNotReferenceImage = errors.New("not a PNG, JPEG, WebP, GIF, HEIC or HEIF image")

// ReferenceType is the type of a reference image read from its bytes
// alone: image/png, image/jpeg or image/gif when the signature is
// followed by a header that gives a size of at least 1x1 (ImageSize);
// image/webp from its RIFF WEBPVP8 header; image/heic or image/heif
// from the major brand of an ISO BMFF ftyp box. Anything else, a
// signature cut short included, is ErrNotReferenceImage. The
// Content-Type the remote server sent is never used: a server may say
// image/png of an HTML page, or image/jpeg of a WebP, and a provider
// told the wrong type of an image rejects it or misreads it.
func ReferenceType(data []byte) (string, error) {
	if ct := bmff.ImageType(data); ct == HEIC || ct == HEIF { // AVIF is no reference image
		return ct, nil
	}
	switch ct := ContentType(data); ct {
	case PNG, JPEG, GIF:
		if err := checkHeader(ct, data); err != nil {
			return "", fmt.Errorf("%w: a %s signature without a whole header: %w", ErrNotReferenceImage, ct, err)
		}
		return ct, nil
	case WebP:
		return ct, nil
	}
	return "", ErrNotReferenceImage
}
