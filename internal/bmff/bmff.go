// Package bmff tells the image types that start with an ISO base media
// file format (ISO BMFF) ftyp box, which net/http.DetectContentType
// does not sniff: AVIF, HEIC and HEIF. The worker's check of a model's
// images and the providers' check of reference images both read them
// here.
package bmff

import "bytes"

// ImageType is "image/avif", "image/heic" or "image/heif" when data
// starts with an ftyp box of such a major brand (AV1 Image File Format;
// ISO/IEC 23008-12: heic, heix, heim, heis, hevc, hevx, hevm, hevs for
// HEVC-coded images, mif1 and msf1 for HEIF of another coding); ""
// otherwise.
func ImageType(data []byte) string {
	if len(data) < 12 || !bytes.Equal(data[4:8], []byte("ftyp")) {
		return ""
	}
	switch string(data[8:12]) {
	case "avif", "avis":
		return "image/avif"
	case "heic", "heix", "heim", "heis", "hevc", "hevx", "hevm", "hevs":
		return "image/heic"
	case "mif1", "msf1":
		return "image/heif"
	}
	return ""
}
