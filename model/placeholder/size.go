package placeholder

import (
	"image"

	"github.com/imagegen/imagegen"
)

// chooseRatio resolves auto: the nearest allowed ratio of the first
// reference image, else 1:1.
func chooseRatio(ratio imagegen.AspectRatio, refs []image.Image) imagegen.AspectRatio {
	if ratio != imagegen.AspectAuto && ratio != "" {
		return ratio
	}
	if len(refs) > 0 {
		b := refs[0].Bounds()
		return imagegen.NearestAspectRatio(b.Dx(), b.Dy())
	}
	return imagegen.Aspect1x1
}

// size is the picture's size for a concrete ratio: the long side is
// long, the short side follows the ratio, rounded.
func size(ratio imagegen.AspectRatio, long int) (w, h int) {
	rw, rh := ratio.Size()
	if rw <= 0 || rh <= 0 {
		return long, long
	}
	if rw >= rh {
		return long, max(1, (long*rh+rw/2)/rw)
	}
	return max(1, (long*rw+rh/2)/rh), long
}
