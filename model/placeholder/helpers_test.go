package placeholder_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/fetch"
	"github.com/imagegen/imagegen/model/placeholder"
)

// generate runs m on req and decodes the one PNG it must return.
func generate(t *testing.T, m *placeholder.Model, req imagegen.Request) *image.NRGBA {
	t.Helper()
	is := is.NewRelaxed(t)
	out, err := m.Generate(t.Context(), imagegen.Generation{TaskID: "t", Model: placeholder.Name, Request: req, Attempt: 1})
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	is.Equal(len(out), 1)
	is.Equal(out[0].ContentType, "image/png")
	img, err := png.Decode(bytes.NewReader(out[0].Data))
	if err != nil {
		t.Fatalf("decoding the PNG: %v", err)
	}
	nrgba := image.NewNRGBA(img.Bounds())
	draw.Draw(nrgba, nrgba.Rect, img, img.Bounds().Min, draw.Src)
	return nrgba
}

// solid is a w x h image of one colour.
func solid(w, h int, c color.NRGBA) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := 0; i < len(img.Pix); i += 4 {
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = c.R, c.G, c.B, c.A
	}
	return img
}

// count returns how many pixels of img are exactly c.
func count(img *image.NRGBA, c color.NRGBA) int {
	n := 0
	for i := 0; i < len(img.Pix); i += 4 {
		if img.Pix[i] == c.R && img.Pix[i+1] == c.G && img.Pix[i+2] == c.B && img.Pix[i+3] == c.A {
			n++
		}
	}
	return n
}

// serveImages serves PNGs by path on loopback, 404 for any other path.
func serveImages(t *testing.T, images map[string]image.Image) *httptest.Server {
	t.Helper()
	files := map[string][]byte{}
	for path, img := range images {
		var buf bytes.Buffer
		if err := png.Encode(&buf, img); err != nil {
			t.Fatal(err)
		}
		files[path] = buf.Bytes()
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(data)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// fetcher is a scripted ReferenceFetcher: each URL answers its image or
// error; it records the URLs asked for.
type fetcher struct {
	mu      sync.Mutex
	answers map[string]func(ctx context.Context) (image.Image, error)
	asked   []string
	fetched map[string]image.Image
}

// Fetch answers the URL's image, kept aside; its "bytes" name it.
func (f *fetcher) Fetch(ctx context.Context, url string) ([]byte, string, error) {
	f.mu.Lock()
	f.asked = append(f.asked, url)
	answer := f.answers[url]
	f.mu.Unlock()
	img, err := answer(ctx)
	if err != nil {
		return nil, "", err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fetched == nil {
		f.fetched = map[string]image.Image{}
	}
	f.fetched[url] = img
	return []byte(url), "image/png", nil
}

func (f *fetcher) DecodeConfig(data []byte) (image.Config, string, error) {
	img, _, err := f.Decode(data)
	if err != nil {
		return image.Config{}, "", err
	}
	b := img.Bounds()
	return image.Config{ColorModel: img.ColorModel(), Width: b.Dx(), Height: b.Dy()}, "png", nil
}

func (f *fetcher) Decode(data []byte) (image.Image, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	img, ok := f.fetched[string(data)]
	if !ok {
		return nil, "", fmt.Errorf("%w: never fetched", fetch.ErrNotImage)
	}
	return img, "png", nil
}

func (f *fetcher) Asked() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.asked...)
}

// clock is a manual imagegen.Clock: After reports each wait on called
// and returns a channel that fires when the test sends on fire.
type clock struct {
	called chan time.Duration
	fire   chan time.Time
}

func newClock() *clock {
	return &clock{called: make(chan time.Duration, 8), fire: make(chan time.Time)}
}

func (c *clock) Now() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }

func (c *clock) After(d time.Duration) <-chan time.Time {
	c.called <- d
	return c.fire
}

// waitCalled returns the duration of the next After call. The bound only
// keeps a broken model from hanging the test run.
func (c *clock) waitCalled(t *testing.T) time.Duration {
	t.Helper()
	select {
	case d := <-c.called:
		return d
	case <-time.After(10 * time.Second):
		t.Fatal("the model never waited on the clock")
		return 0
	}
}

// noWait is a Clock that fails the test if anything waits on it.
type noWait struct{ t *testing.T }

func (c noWait) Now() time.Time { return time.Time{} }

func (c noWait) After(d time.Duration) <-chan time.Time {
	c.t.Errorf("unexpected wait of %v", d)
	ch := make(chan time.Time, 1)
	ch <- time.Time{}
	return ch
}
