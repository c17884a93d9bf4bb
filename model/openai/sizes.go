package openai

import (
	"strings"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
)

// family is what the adapter knows of a kind of model.
type family struct {
	sizes     []provider.Size
	edits     bool     // has /images/edits (image-to-image)
	gptImage  bool     // always answers b64_json; takes output_format
	qualities []string // accepted Config.Quality values
}

// The families; functions, so that no table is shared mutable state.
func gptImage() family {
	return family{
		sizes:     []provider.Size{{W: 1024, H: 1024}, {W: 1536, H: 1024}, {W: 1024, H: 1536}},
		edits:     true,
		gptImage:  true,
		qualities: []string{"low", "medium", "high", "auto"},
	}
}

func dallE3() family {
	return family{
		sizes:     []provider.Size{{W: 1024, H: 1024}, {W: 1792, H: 1024}, {W: 1024, H: 1792}},
		qualities: []string{"standard", "hd"},
	}
}

// familyOf returns the family of a model name, or false.
func familyOf(model string) (family, bool) {
	switch {
	case model == "dall-e-3":
		return dallE3(), true
	case strings.HasPrefix(model, "gpt-image-"), strings.HasPrefix(model, "chatgpt-image-"):
		return gptImage(), true
	}
	return family{}, false
}

// exactRatios are the ratios for which the family has a size of exactly
// that ratio, in imagegen.AspectRatios order.
func (f family) exactRatios() []imagegen.AspectRatio {
	var out []imagegen.AspectRatio
	for _, r := range imagegen.AspectRatios() {
		if _, exact := provider.SizeFor(r, f.sizes); exact {
			out = append(out, r)
		}
	}
	return out
}

// sizeFor is the size to ask for to get ratio r, and whether it is exact.
func (f family) sizeFor(r imagegen.AspectRatio) (provider.Size, bool) {
	return provider.SizeFor(r, f.sizes)
}
