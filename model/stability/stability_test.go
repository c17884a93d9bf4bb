package stability_test

import (
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
	"github.com/imagegen/imagegen/model/stability"
)

// newModel returns an adapter pointed at f, with a recording clock.
func newModel(t *testing.T, f *fake, c stability.Config) (*stability.Model, *providertest.InstantClock) {
	t.Helper()
	clock := providertest.Configure(&c.Config, f.srv.URL, key)
	return providertest.MustNew(t, stability.New, c), clock
}

func TestNew(t *testing.T) {
	k := provider.Config{APIKey: key}
	for _, tc := range []struct {
		name string
		c    stability.Config
		want string
	}{
		{"no key", stability.Config{}, "stability: Config.APIKey is required"},
		{"unknown model", stability.Config{Config: k, Model: "stable-diffusion-xl-1024-v1-0"}, `stability: Config.Model "stable-diffusion-xl-1024-v1-0" is not supported (one of core, ultra, sd3.5-large,`},
		{"strength above 1", stability.Config{Config: k, Strength: 1.5}, "stability: Config.Strength must be more than 0 and at most 1 (got 1.5)"},
		{"negative strength", stability.Config{Config: k, Strength: -0.1}, "stability: Config.Strength must be more than 0"},
		{"unknown style", stability.Config{Config: k, StylePreset: "watercolour"}, `stability: Config.StylePreset "watercolour" is not one of the API's presets`},
		{"style on ultra", stability.Config{Config: k, Model: "ultra", StylePreset: "anime"}, `stability: Config.StylePreset is not taken by this model`},
		{"bad cost", stability.Config{Config: provider.Config{APIKey: key, Cost: 4}}, "stability: Config.Cost must be 1 to 3"},
	} {
		t.Run(tc.name, func(t *testing.T) { providertest.NewFails(t, stability.New, tc.c, tc.want) })
	}
	is := is.New(t)
	m, err := stability.New(stability.Config{Config: provider.Config{APIKey: key, Cost: 1}, Model: "ultra"})
	is.NoErr(err)
	is.Equal(m.Name(), "stability/ultra")
	plan, err := m.Plan(providertest.T2I("a fox", imagegen.AspectAuto))
	is.NoErr(err)
	is.Equal(plan.Cost, int64(1)) // Config.Cost wins over the model's default
}
