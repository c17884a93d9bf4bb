package provider

import (
	"fmt"

	"github.com/imagegen/imagegen"
)

// AnswerRatio is the ratio a provider's answer is cropped to when the
// provider chose its size: TargetRatio, except for auto with a first
// reference of unknown size (WebP, HEIC), where it is "": CropAll then
// crops each answer to the allowed ratio nearest its own size, since the
// reference set the answer's shape.
func AnswerRatio(req imagegen.Request, refs []Reference) imagegen.AspectRatio {
	auto := req.AspectRatio == "" || req.AspectRatio == imagegen.AspectAuto
	if auto && req.Scene == imagegen.SceneImageToImage && len(refs) > 0 && refs[0].Width == 0 {
		return ""
	}
	return TargetRatio(req, refs, nil)
}

// CropAll centre-crops every image to ratio (CropToRatio), or with ratio
// "" to the allowed ratio nearest its own size. An image that cannot be
// decoded (WebP) is kept as it is; one that fails to crop is a BadAnswer
// of provider, not retried.
func CropAll(provider string, imgs []imagegen.GeneratedImage, ratio imagegen.AspectRatio) ([]imagegen.GeneratedImage, error) {
	for i, img := range imgs {
		r := ratio
		if r == "" {
			s, err := ImageSize(img.Data)
			if err != nil {
				continue // cannot crop what cannot be decoded
			}
			r = s.Ratio()
		}
		out, _, err := CropToRatio(img, r)
		if err != nil {
			return nil, BadAnswer(provider, false, fmt.Errorf("image %d: %w", i, err))
		}
		imgs[i] = out
	}
	return imgs, nil
}

// AnsweredImage is an image that a 2xx answer carried in its body
// (base64, a data: URI) or at a URL: data, with its type read from its
// first bytes, or a retryable BadAnswer saying that what ("data[0]") is
// not an image. A PNG, JPEG or GIF must have a header that gives a size
// (ImageSize): its first bytes alone (a signature, cut short) are not
// an image.
func AnsweredImage(provider, what string, data []byte) (imagegen.GeneratedImage, error) {
	ct := ContentType(data)
	if ct == "" {
		return imagegen.GeneratedImage{}, BadAnswer(provider, true, fmt.Errorf("%s is not an image", what))
	}
	if err := checkHeader(ct, data); err != nil {
		return imagegen.GeneratedImage{}, BadAnswer(provider, true, fmt.Errorf("%s is not a whole %s: %w", what, ct, err))
	}
	return imagegen.GeneratedImage{ContentType: ct, Data: data}, nil
}

// checkHeader reads the size of an image of type ct that the standard
// library decodes (PNG, JPEG, GIF) from its header: it must be at least
// 1x1. Other types pass unread.
func checkHeader(ct string, data []byte) error {
	switch ct {
	case PNG, JPEG, GIF:
	default:
		return nil
	}
	s, err := ImageSize(data)
	if err != nil {
		return err
	}
	if s.W < 1 || s.H < 1 {
		return fmt.Errorf("%w: size %dx%d", ErrUnknownFormat, s.W, s.H)
	}
	return nil
}
