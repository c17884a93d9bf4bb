package provider

import (
	"fmt"
	"math"

	"github.com/imagegen/imagegen"
)

// Size is an image size in pixels. Its String form, "1536x1024", is the
// one most image APIs take.
type Size struct{ W, H int }

func (s Size) String() string { return fmt.Sprintf("%dx%d", s.W, s.H) }

// Is reports whether s has exactly the ratio r.
func (s Size) Is(r imagegen.AspectRatio) bool {
	rw, rh := r.Size()
	return rw > 0 && s.W > 0 && s.H > 0 && s.W*rh == s.H*rw
}

// Ratio is the allowed ratio nearest s.
func (s Size) Ratio() imagegen.AspectRatio { return imagegen.NearestAspectRatio(s.W, s.H) }

// SizeFor picks, among a model's sizes, the one to ask for to get ratio
// r: one of exactly that ratio when there is one (exact is then true),
// else the nearest on a log scale (the first of equals). r must be a
// concrete ratio and sizes not empty.
func SizeFor(r imagegen.AspectRatio, sizes []Size) (s Size, exact bool) {
	rw, rh := r.Size()
	if rw == 0 || len(sizes) == 0 {
		return Size{}, false
	}
	best, bestDist := sizes[0], math.Inf(1)
	for _, c := range sizes {
		if c.Is(r) {
			return c, true
		}
		if d := logDistance(float64(c.W)/float64(c.H), float64(rw)/float64(rh)); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best, false
}

// NearestOf returns, among allowed ratios, the one nearest width:height
// on a log scale (the first of equals); Aspect1x1 when allowed is empty
// or the size unknown. With every ratio allowed it agrees with
// imagegen.NearestAspectRatio.
func NearestOf(width, height int, allowed []imagegen.AspectRatio) imagegen.AspectRatio {
	if width <= 0 || height <= 0 || len(allowed) == 0 {
		return imagegen.Aspect1x1
	}
	target := float64(width) / float64(height)
	best, bestDist := imagegen.Aspect1x1, math.Inf(1)
	for _, a := range allowed {
		w, h := a.Size()
		if w == 0 {
			continue
		}
		if d := logDistance(float64(w)/float64(h), target); d < bestDist {
			best, bestDist = a, d
		}
	}
	return best
}

func logDistance(a, b float64) float64 { return math.Abs(math.Log(a / b)) }

// CropSize is the largest size of exactly ratio r that fits in w x h:
// (k*rw, k*rh) for the largest whole k. It is w x h when r is not a
// concrete ratio or nothing fits.
func CropSize(w, h int, r imagegen.AspectRatio) Size {
	rw, rh := r.Size()
	if rw == 0 || w < rw || h < rh {
		return Size{w, h}
	}
	k := min(w/rw, h/rh)
	return Size{k * rw, k * rh}
}

// TargetRatio is the ratio a generation must come out in, by the
// API's rule for aspect ratios (docs/api.md): the requested one, or
// for auto 1:1 for text-to-image and the first reference's nearest
// allowed ratio for image-to-image (1:1 when its size is unknown).
// allowed limits the choice for auto (nil: every ratio).
func TargetRatio(req imagegen.Request, refs []Reference, allowed []imagegen.AspectRatio) imagegen.AspectRatio {
	if req.AspectRatio != "" && req.AspectRatio != imagegen.AspectAuto {
		return req.AspectRatio
	}
	if allowed == nil {
		allowed = imagegen.AspectRatios()
	}
	if req.Scene == imagegen.SceneImageToImage && len(refs) > 0 && refs[0].Width > 0 {
		return NearestOf(refs[0].Width, refs[0].Height, allowed)
	}
	for _, a := range allowed {
		if a == imagegen.Aspect1x1 {
			return a
		}
	}
	return NearestOf(1, 1, allowed)
}

// ExactSize is a size of exactly ratio r whose sides are multiples of
// multiple (8 for Stable Diffusion's latent space), with about the area
// of a square of the given side: for side 1024 and multiple 8, 1:1
// 1024x1024, 16:9 1408x792, 4:3 1184x888, 3:2 1248x832 and their
// portraits. A ratio that is not concrete (auto) is taken as 1:1.
func ExactSize(r imagegen.AspectRatio, side, multiple int) Size {
	a, b := r.Size()
	if a == 0 {
		a, b = 1, 1
	}
	step := lcm(multiple/gcd(a, multiple), multiple/gcd(b, multiple)) // the least k making a*k and b*k multiples
	k := math.Sqrt(float64(side*side) / float64(a*b))
	n := max(1, int(math.Round(k/float64(step))))
	return Size{W: a * n * step, H: b * n * step}
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func lcm(a, b int) int { return a / gcd(a, b) * b }
