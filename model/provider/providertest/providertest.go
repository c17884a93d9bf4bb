// Package providertest has test helpers for provider adapters: a clock
// that records waits instead of sleeping, a scripted image fetcher,
// PNG/JPEG makers, the wire-spec example loader, and a check that a key
// never shows up in printed or logged values; for the adapters' fake
// APIs, the queue of canned answers and record of calls (Script), a
// hanging answer (Hang), multipart forms, JSON example edits and OpenAPI
// routing; and the set-up of an adapter under test (Configure, MustNew).
// No network, no sleeps.
package providertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
)

var _ imagegen.Clock = (*Clock)(nil)

// Clock records every wait asked of it and lets it pass at once, moving
// its time forward by the wait. It is safe for concurrent use.
type Clock struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration
}

// NewClock returns a clock at a fixed date.
func NewClock() *Clock { return &Clock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// After records d, moves the clock on by d and fires at once.
func (c *Clock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waits = append(c.waits, d)
	c.now = c.now.Add(max(d, 0))
	ch := make(chan time.Time, 1)
	ch <- c.now
	return ch
}

// Waits returns the waits asked for so far, in order.
func (c *Clock) Waits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.waits...)
}

// Fetcher serves images from a map by URL and records what it was
// asked. A URL not in the map fails with Err (or a generic error).
type Fetcher struct {
	mu     sync.Mutex
	Images map[string]Image
	Err    error
	asked  []string
}

// Image is one answer of Fetcher.
type Image struct {
	Data        []byte
	ContentType string
	Err         error
}

// Fetch returns the image for url.
func (f *Fetcher) Fetch(ctx context.Context, url string) ([]byte, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, url)
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	img, ok := f.Images[url]
	switch {
	case ok && img.Err != nil:
		return nil, "", img.Err
	case ok:
		return img.Data, img.ContentType, nil
	case f.Err != nil:
		return nil, "", f.Err
	}
	return nil, "", fmt.Errorf("unexpected HTTP status 404")
}

// Asked returns the URLs fetched so far, in order.
func (f *Fetcher) Asked() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.asked...)
}

// PNG returns a w x h PNG: a flat colour with a darker left half, so a
// crop's position can be told.
func PNG(w, h int) []byte {
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(&buf, picture(w, h)); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// JPEG returns a w x h JPEG.
func JPEG(w, h int) []byte {
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, picture(w, h), nil); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

func picture(w, h int) image.Image {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	row := make([]byte, 4*w)
	for x := range w {
		c := color.NRGBA{R: 200, G: 120, B: 40, A: 255}
		if x < w/2 {
			c = color.NRGBA{R: 40, G: 60, B: 160, A: 255}
		}
		copy(row[4*x:], []byte{c.R, c.G, c.B, c.A})
	}
	for y := range h {
		copy(img.Pix[y*img.Stride:], row)
	}
	return img
}

// Size decodes data's header and returns its size; it fails the test if
// data is not an image.
func Size(t testing.TB, data []byte) (w, h int) {
	t.Helper()
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("not an image: %v", err)
	}
	return cfg.Width, cfg.Height
}

// SpecsDir is where the provider wire specs are, seen from a package
// directory two levels under the module root (model/<adapter>).
const SpecsDir = "../../../shared/specs"

// Spec returns a file of the wire specs (provider "openai", name
// "examples/error.rate_limit.json"); it skips the test, saying why, when
// the specs are not there.
func Spec(t testing.TB, provider, name string) []byte {
	t.Helper()
	path := filepath.Join(SpecsDir, provider, name)
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		t.Skipf("wire spec %s is absent (the tests read /work/shared/specs through %s): skipping", path, SpecsDir)
	}
	if err != nil {
		t.Fatalf("reading wire spec %s: %v", path, err)
	}
	return data
}

// NoSecret fails the test if secret shows in any way v may be printed
// or logged: fmt's %v, %+v, %#v, %s and %q, log/slog's text and JSON
// handlers, and encoding/json. A provider.Config passes it; a Model
// should pass NoSecretAnywhere.
func NoSecret(t testing.TB, secret string, v any) {
	t.Helper()
	for _, s := range printed(v) {
		if strings.Contains(s, secret) {
			t.Errorf("the key shows in %q", s)
		}
	}
}

// NoSecretAnywhere is NoSecret for v as it is and for v inside a
// caller's unexported struct field, where fmt calls no method of v (so
// a Secret type's own redaction does not help): what holds a key must
// hold it where printing cannot reach, as *provider.Client does.
func NoSecretAnywhere(t testing.TB, secret string, v any) {
	t.Helper()
	NoSecret(t, secret, v)
	type holder struct{ inner any }
	NoSecret(t, secret, holder{v})
	NoSecret(t, secret, &holder{v})
}

func printed(v any) []string {
	var out []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
		out = append(out, fmt.Sprintf(verb, v))
	}
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, nil)).Info("value", "value", v)
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("value", "value", v)
	out = append(out, buf.String())
	if b, err := json.Marshal(v); err == nil {
		out = append(out, string(b))
	}
	return out
}
