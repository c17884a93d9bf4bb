package gemini_test

import (
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen/model/gemini"
	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

// newModel returns an adapter pointed at f, with a recording clock.
func newModel(t *testing.T, f *fake, c gemini.Config) (*gemini.Model, *providertest.InstantClock) {
	t.Helper()
	clock := providertest.Configure(&c.Config, f.baseURL(), key)
	return providertest.MustNew(t, gemini.New, c), clock
}

func TestNew(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    gemini.Config
		want string
	}{
		{"no key", gemini.Config{}, "gemini: Config.APIKey is required"},
		{"bad model", gemini.Config{Config: provider.Config{APIKey: key}, Model: "../x"}, `gemini: Config.Model "../x" is not a model id`},
		{"bad image size", gemini.Config{Config: provider.Config{APIKey: key}, ImageSize: "2k"}, "gemini: Config.ImageSize must be 1K, 2K or 4K"},
		{"bad cost", gemini.Config{Config: provider.Config{APIKey: key, Cost: 4}}, "gemini: Config.Cost must be 1 to 3"},
	} {
		t.Run(tc.name, func(t *testing.T) { providertest.NewFails(t, gemini.New, tc.c, tc.want) })
	}
	is := is.New(t)
	m, err := gemini.New(gemini.Config{Config: provider.Config{APIKey: key}, Model: "gemini-3-pro-image-preview"})
	is.NoErr(err)
	is.Equal(m.Name(), "gemini/gemini-3-pro-image-preview")
}
