package imagegen_test

import (
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
)

func TestStatusTransitions(t *testing.T) {
	all := []imagegen.Status{imagegen.StatusPending, imagegen.StatusProcessing, imagegen.StatusSuccess, imagegen.StatusFailed}
	allowed := map[[2]imagegen.Status]bool{
		{imagegen.StatusPending, imagegen.StatusProcessing}: true,
		{imagegen.StatusPending, imagegen.StatusFailed}:     true,
		{imagegen.StatusProcessing, imagegen.StatusSuccess}: true,
		{imagegen.StatusProcessing, imagegen.StatusFailed}:  true,
		{imagegen.StatusProcessing, imagegen.StatusPending}: true,
	}
	// Every pair of states, including self-transitions and an unknown state.
	states := append(all, imagegen.Status("bogus"))
	for _, from := range states {
		for _, to := range states {
			t.Run(string(from)+"->"+string(to), func(t *testing.T) {
				is := is.New(t)
				is.Equal(from.CanTransition(to), allowed[[2]imagegen.Status{from, to}])
			})
		}
	}
	for _, s := range all {
		is.New(t).Equal(s.Terminal(), s == imagegen.StatusSuccess || s == imagegen.StatusFailed)
		is.New(t).True(s.Valid())
	}
	is.New(t).True(!imagegen.Status("bogus").Valid())
}

func TestAspectRatios(t *testing.T) {
	is := is.New(t)
	for _, a := range imagegen.AspectRatios() {
		w, h := a.Size()
		is.True(w > 0 && h > 0)
		is.True(a.Valid())
		is.Equal(imagegen.NearestAspectRatio(w*100, h*100), a) // exact ratios map to themselves
	}
	is.True(imagegen.AspectAuto.Valid())
	is.True(!imagegen.AspectRatio("5:4").Valid())
	is.Equal(imagegen.NearestAspectRatio(1920, 1080), imagegen.Aspect16x9)
	is.Equal(imagegen.NearestAspectRatio(1000, 1010), imagegen.Aspect1x1)
	is.Equal(imagegen.NearestAspectRatio(100, 300), imagegen.Aspect9x16) // 1:3 is nearest 9:16
	is.Equal(imagegen.NearestAspectRatio(0, 10), imagegen.Aspect1x1)
}
