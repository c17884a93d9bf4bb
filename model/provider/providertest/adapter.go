package providertest

import (
	"testing"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
)

// Configure points c, an adapter's provider.Config, at a fake API at
// baseURL: it sets the base URL, the key when c names none, and a new
// Clock when c has none, and returns that clock.
func Configure(c *provider.Config, baseURL string, key provider.Secret) *Clock {
	clock := NewClock()
	c.BaseURL = baseURL
	if c.APIKey == "" {
		c.APIKey = key
	}
	if c.Clock == nil {
		c.Clock = clock
	}
	return clock
}

// MustNew returns the adapter newModel makes of c (an adapter's New and
// Config), or fails the test if it refuses c.
func MustNew[C, M any](t testing.TB, newModel func(C) (M, error), c C) M {
	t.Helper()
	m, err := newModel(c)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// SizeOf returns the size of a generated image; it fails the test if
// the image's data is not an image.
func SizeOf(t testing.TB, img imagegen.GeneratedImage) provider.Size {
	t.Helper()
	w, h := Size(t, img.Data)
	return provider.Size{W: w, H: h}
}
