package stability

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
)

// fields are the text fields of the form (Stability's API reference):
//
//	prompt         always
//	model, mode    SD3 only: the model id; text-to-image or image-to-image
//	aspect_ratio   text-to-image only (an init image sets the shape)
//	strength       with the init image only
//	style_preset   when configured (core and SD3)
//	seed           the task's seed, when it has one (0 means random there)
//	output_format  png, which every service takes and the crop can decode
func (m *Model) fields(prompt string, seed *int64, ratio imagegen.AspectRatio, ref *provider.Reference) []provider.FormField {
	f := []provider.FormField{{Name: "prompt", Value: prompt}}
	if m.service.sd3 {
		mode := "text-to-image"
		if ref != nil {
			mode = "image-to-image"
		}
		f = append(f, provider.FormField{Name: "model", Value: m.cfg.Model}, provider.FormField{Name: "mode", Value: mode})
	}
	if ref == nil {
		f = append(f, provider.FormField{Name: "aspect_ratio", Value: aspectRatio(ratio)})
	} else {
		f = append(f, provider.FormField{Name: "strength", Value: strconv.FormatFloat(m.cfg.Strength, 'f', -1, 64)})
	}
	if m.cfg.StylePreset != "" {
		f = append(f, provider.FormField{Name: "style_preset", Value: m.cfg.StylePreset})
	}
	if seed != nil {
		f = append(f, provider.FormField{Name: "seed", Value: strconv.FormatInt(*seed, 10)})
	}
	return append(f, provider.FormField{Name: "output_format", Value: "png"})
}

// files is the init image part, "image", when there is one.
func files(ref *provider.Reference) []provider.FormFile {
	if ref == nil {
		return nil
	}
	return []provider.FormFile{{Name: "image", Filename: "image." + provider.FileExtension(ref.ContentType), ContentType: ref.ContentType, Data: ref.Data}}
}

// Limits of an init image (Stability's API reference): every side at
// least 64 px, 4,096 to 9,437,184 pixels, and a request body of about
// 10 MiB at most.
const (
	minSide           = 64
	minPixels         = 4096
	maxPixels         = 9_437_184
	maxReferenceBytes = 10<<20 - 64<<10 // room for the other fields
)

// checkReference fails, as invalid input, an init image the API would
// refuse. A size it cannot read (WebP) is left to the API.
func checkReference(r provider.Reference) error {
	var why string
	pixels := r.Width * r.Height
	switch {
	case len(r.Data) > maxReferenceBytes:
		why = fmt.Sprintf("is too large for this provider (%d bytes, at most %d)", len(r.Data), maxReferenceBytes)
	case r.Width == 0:
		return nil
	case r.Width < minSide || r.Height < minSide:
		why = fmt.Sprintf("is too small for this provider (%dx%d; every side must be at least %d pixels)", r.Width, r.Height, minSide)
	case pixels < minPixels || pixels > maxPixels:
		why = fmt.Sprintf("has %d pixels; this provider takes %d to %d", pixels, minPixels, maxPixels)
	default:
		return nil
	}
	return &imagegen.ModelError{Provider: Provider, InvalidInput: true, Message: "image_input[0] " + why, Err: fmt.Errorf("image_input[0] %s", why)}
}

// stylePresets are the style_preset values the API takes.
func stylePresets() []string {
	return []string{"3d-model", "analog-film", "anime", "cinematic", "comic-book", "digital-art", "enhance", "fantasy-art",
		"isometric", "line-art", "low-poly", "modeling-compound", "neon-punk", "origami", "photographic", "pixel-art", "tile-texture"}
}

func checkStylePreset(p string, svc service) error {
	if !svc.style {
		return fmt.Errorf("is not taken by this model (got %q)", p)
	}
	if !slices.Contains(stylePresets(), p) {
		return fmt.Errorf("%q is not one of the API's presets (%v)", p, stylePresets())
	}
	return nil
}
