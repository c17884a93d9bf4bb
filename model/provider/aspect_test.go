package provider_test

import (
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
)

func TestSizeFor(t *testing.T) {
	sizes := []provider.Size{{1024, 1024}, {1536, 1024}, {1024, 1536}}
	for _, tc := range []struct {
		ratio imagegen.AspectRatio
		want  provider.Size
		exact bool
	}{
		{imagegen.Aspect1x1, provider.Size{1024, 1024}, true},
		{imagegen.Aspect3x2, provider.Size{1536, 1024}, true},
		{imagegen.Aspect2x3, provider.Size{1024, 1536}, true},
		{imagegen.Aspect16x9, provider.Size{1536, 1024}, false},
		{imagegen.Aspect9x16, provider.Size{1024, 1536}, false},
		{imagegen.Aspect4x3, provider.Size{1536, 1024}, false},
		{imagegen.Aspect3x4, provider.Size{1024, 1536}, false},
	} {
		got, exact := provider.SizeFor(tc.ratio, sizes)
		if got != tc.want || exact != tc.exact {
			t.Errorf("SizeFor(%s) = %v, %v; want %v, %v", tc.ratio, got, exact, tc.want, tc.exact)
		}
	}
	is.New(t).Equal(provider.Size{1536, 1024}.String(), "1536x1024")
}

func TestCropSizeIsExact(t *testing.T) {
	for _, from := range []provider.Size{{1024, 1024}, {1536, 1024}, {1024, 1536}, {1792, 1024}, {1024, 1792}, {1184, 864}} {
		for _, r := range imagegen.AspectRatios() {
			c := provider.CropSize(from.W, from.H, r)
			if !c.Is(r) || c.W > from.W || c.H > from.H {
				t.Errorf("CropSize(%v, %s) = %v", from, r, c)
			}
			rw, rh := r.Size()
			if from.W-c.W >= rw && from.H-c.H >= rh { // the largest that fits
				t.Errorf("CropSize(%v, %s) = %v is not the largest", from, r, c)
			}
		}
	}
	is := is.New(t)
	is.Equal(provider.CropSize(1536, 1024, imagegen.Aspect16x9), provider.Size{1536, 864})
	is.Equal(provider.CropSize(1536, 1024, imagegen.Aspect4x3), provider.Size{1364, 1023})
	is.Equal(provider.CropSize(1024, 1024, imagegen.AspectAuto), provider.Size{1024, 1024})
}

func TestNearestOf(t *testing.T) {
	is := is.New(t)
	for _, s := range []provider.Size{{1, 1}, {1920, 1080}, {1080, 1920}, {1000, 700}, {700, 1000}, {3000, 1000}} {
		is.Equal(provider.NearestOf(s.W, s.H, imagegen.AspectRatios()), imagegen.NearestAspectRatio(s.W, s.H))
	}
	only := []imagegen.AspectRatio{imagegen.Aspect1x1, imagegen.Aspect3x2, imagegen.Aspect2x3}
	is.Equal(provider.NearestOf(1920, 1080, only), imagegen.Aspect3x2)
	is.Equal(provider.NearestOf(0, 0, only), imagegen.Aspect1x1)
}

func TestTargetRatio(t *testing.T) {
	is := is.New(t)
	t2i := imagegen.Request{Scene: imagegen.SceneTextToImage, AspectRatio: imagegen.AspectAuto}
	i2i := imagegen.Request{Scene: imagegen.SceneImageToImage, AspectRatio: imagegen.AspectAuto}
	wide := []provider.Reference{{Width: 1920, Height: 1080}, {Width: 100, Height: 300}}
	is.Equal(provider.TargetRatio(t2i, nil, nil), imagegen.Aspect1x1)
	is.Equal(provider.TargetRatio(imagegen.Request{Scene: imagegen.SceneTextToImage}, nil, nil), imagegen.Aspect1x1) // "" is auto
	is.Equal(provider.TargetRatio(i2i, wide, nil), imagegen.Aspect16x9)                                              // the first reference's
	is.Equal(provider.TargetRatio(i2i, []provider.Reference{{}}, nil), imagegen.Aspect1x1)                           // size unknown
	is.Equal(provider.TargetRatio(i2i, wide, []imagegen.AspectRatio{imagegen.Aspect1x1, imagegen.Aspect3x2}), imagegen.Aspect3x2)
	fixed := imagegen.Request{Scene: imagegen.SceneImageToImage, AspectRatio: imagegen.Aspect3x4}
	is.Equal(provider.TargetRatio(fixed, wide, nil), imagegen.Aspect3x4)
}

// ExactSize makes sizes of exactly the ratio, in multiples of the step,
// near the area asked.
func TestExactSize(t *testing.T) {
	for _, multiple := range []int{8, 16, 64} {
		for _, side := range []int{512, 768, 1024, 1536} {
			for _, r := range imagegen.AspectRatios() {
				s := provider.ExactSize(r, side, multiple)
				if !s.Is(r) || s.W%multiple != 0 || s.H%multiple != 0 {
					t.Errorf("ExactSize(%s, %d, %d) = %v: not exactly %s in multiples of %d", r, side, multiple, s, r, multiple)
				}
				if area, want := float64(s.W*s.H), float64(side*side); multiple == 8 && (area < 0.8*want || area > 1.25*want) {
					t.Errorf("ExactSize(%s, %d, 8) = %v: %v pixels, far from %v", r, side, s, area, want)
				}
			}
		}
	}
	if got := provider.ExactSize(imagegen.Aspect16x9, 1024, 8); got != (provider.Size{W: 1408, H: 792}) {
		t.Errorf("ExactSize(16:9, 1024, 8) = %v; want 1408x792", got)
	}
}
