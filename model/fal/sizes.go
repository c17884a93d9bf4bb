package fal

import (
	"encoding/json"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
)

// imageSize is flux/dev's image_size input: one of its named presets, or
// a custom {width, height}. Exactly one of the two is set.
type imageSize struct {
	preset string
	custom provider.Size
}

// MarshalJSON writes the preset as a string, or the custom size as
// {"width":W,"height":H}.
func (s imageSize) MarshalJSON() ([]byte, error) {
	if s.preset != "" {
		return json.Marshal(s.preset)
	}
	return json.Marshal(struct {
		Width  int `json:"width"`
		Height int `json:"height"`
	}{s.custom.W, s.custom.H})
}

// sizeFor is the image_size to send for a concrete ratio. Five ratios
// have a preset of exactly that ratio; 3:2 and 2:3 have none, and are
// sent as a custom size of exactly that ratio (multiples of 16, about a
// megapixel, like the presets). The answer is centre-cropped to the
// ratio anyway, should a model answer another size.
func sizeFor(r imagegen.AspectRatio) imageSize {
	switch r {
	case imagegen.Aspect4x3:
		return imageSize{preset: "landscape_4_3"} // 1024x768
	case imagegen.Aspect3x4:
		return imageSize{preset: "portrait_4_3"} // 768x1024
	case imagegen.Aspect16x9:
		return imageSize{preset: "landscape_16_9"} // 1024x576
	case imagegen.Aspect9x16:
		return imageSize{preset: "portrait_16_9"} // 576x1024
	case imagegen.Aspect3x2:
		return imageSize{custom: provider.Size{W: 1248, H: 832}}
	case imagegen.Aspect2x3:
		return imageSize{custom: provider.Size{W: 832, H: 1248}}
	}
	return imageSize{preset: "square_hd"} // 1:1, and auto (1:1 for text-to-image): 1024x1024
}
