package openai_test

import (
	"context"
	"errors"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/openai"
	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

var ctx = context.Background()

// newModel returns an adapter pointed at f, with a recording clock.
func newModel(t *testing.T, f *fake, c openai.Config) (*openai.Model, *providertest.InstantClock) {
	t.Helper()
	clock := providertest.Configure(&c.Config, f.baseURL(), key)
	return providertest.MustNew(t, openai.New, c), clock
}

func TestExactRatiosOnly(t *testing.T) {
	f := newFake(t)
	fetcher := &providertest.Fetcher{Images: map[string]providertest.Image{"https://img.example/wide.png": {Data: providertest.PNG(1920, 1080)}}}
	m, _ := newModel(t, f, openai.Config{ExactRatiosOnly: true, Fetcher: fetcher})
	for _, r := range imagegen.AspectRatios() {
		t.Run(string(r), func(t *testing.T) {
			is := is.New(t)
			_, err := m.Plan(providertest.T2I("a fox", r))
			switch r {
			case imagegen.Aspect1x1, imagegen.Aspect3x2, imagegen.Aspect2x3:
				is.NoErr(err)
			default:
				var ve *imagegen.ValidationError
				is.True(errors.As(err, &ve))
				is.Equal(ve.Field, "aspect_ratio")
				is.Equal(ve.Message, "must be one of 1:1, 3:2, 2:3 or auto for model gpt-image-1")
				is.True(errors.Is(err, imagegen.ErrInvalidParams))
			}
		})
	}
	t.Run("auto picks the nearest exact ratio", func(t *testing.T) {
		is := is.New(t)
		imgs, err := providertest.Generate(ctx, m, providertest.I2I("x", imagegen.AspectAuto, "https://img.example/wide.png"))
		is.NoErr(err)
		is.Equal(providertest.SizeOf(t, imgs[0]), provider.Size{W: 1536, H: 1024}) // 3:2, uncropped
	})
	t.Run("dall-e-3 has only 1:1", func(t *testing.T) {
		is := is.New(t)
		d, _ := newModel(t, f, openai.Config{Model: "dall-e-3", ExactRatiosOnly: true})
		_, err := d.Plan(providertest.T2I("a fox", imagegen.Aspect16x9))
		is.Equal(err.Error(), "aspect_ratio: must be one of 1:1 or auto for model dall-e-3")
	})
}

func TestNew(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    openai.Config
		want string
	}{
		{"no key", openai.Config{}, "openai: Config.APIKey is required"},
		{"unknown model", openai.Config{Config: provider.Config{APIKey: key}, Model: "dall-e-2"}, `openai: Config.Model "dall-e-2" is not supported`},
		{"bad quality", openai.Config{Config: provider.Config{APIKey: key}, Quality: "hd"}, "openai: Config.Quality must be one of low, medium, high, auto for gpt-image-1"},
		{"bad cost", openai.Config{Config: provider.Config{APIKey: key, Cost: 9}}, "openai: Config.Cost must be 1 to 3"},
	} {
		t.Run(tc.name, func(t *testing.T) { providertest.NewFails(t, openai.New, tc.c, tc.want) })
	}
	is := is.New(t)
	m, err := openai.New(openai.Config{Config: provider.Config{APIKey: key}, Model: "gpt-image-1-mini"})
	is.NoErr(err)
	is.Equal(m.Name(), "openai/gpt-image-1-mini")
}
