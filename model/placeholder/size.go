package placeholder

import (
	"github.com/imagegen/imagegen"
)

// chooseRatio resolves auto: the nearest allowed ratio of the first
// reference image, else 1:1.
func chooseRatio(ratio imagegen.AspectRatio, refs []reference) imagegen.AspectRatio {
	if ratio != imagegen.AspectAuto && ratio != "" {
		return ratio
	}
	if len(refs) > 0 {
		return imagegen.NearestAspectRatio(refs[0].size.X, refs[0].size.Y)
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
