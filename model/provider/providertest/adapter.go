package providertest

import (
	"strings"
	"testing"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
)

// Configure points c, an adapter's provider.Config, at a fake API at
// baseURL: it sets the base URL, the key when c names none, and a new
// InstantClock when c has no clock, and returns that InstantClock.
func Configure(c *provider.Config, baseURL string, key provider.Secret) *InstantClock {
	clock := NewInstantClock()
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

// NewFails checks that newModel (an adapter's New) refuses c with an
// error that begins with want.
func NewFails[C, M any](t testing.TB, newModel func(C) (M, error), c C, want string) {
	t.Helper()
	_, err := newModel(c)
	if err == nil {
		t.Fatalf("New took the config; want an error beginning %q", want)
	}
	if !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("New: %q; want an error beginning %q", err, want)
	}
}
