package stability

import (
	"fmt"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
)

// apiRatios are the aspect_ratio values the API takes (Stability's
// API reference), as sizes in ratio units, so that provider.SizeFor
// can pick among them.
func apiRatios() []provider.Size {
	return []provider.Size{{W: 16, H: 9}, {W: 1, H: 1}, {W: 21, H: 9}, {W: 2, H: 3}, {W: 3, H: 2}, {W: 4, H: 5}, {W: 5, H: 4}, {W: 9, H: 16}, {W: 9, H: 21}}
}

// aspectRatio is the aspect_ratio to send for r, a concrete ratio: r
// itself when the API has it, else the nearest it has on a log scale
// (5:4 for 4:3, 4:5 for 3:4), whose answer is then centre-cropped.
func aspectRatio(r imagegen.AspectRatio) string {
	s, _ := provider.SizeFor(r, apiRatios())
	return fmt.Sprintf("%d:%d", s.W, s.H)
}
