package placeholder_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/fetch"
	"github.com/imagegen/imagegen/model/placeholder"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

func TestSizesFollowTheAspectRatio(t *testing.T) {
	m, err := placeholder.New(placeholder.Config{})
	is.New(t).NoErr(err)
	for ratio, want := range map[imagegen.AspectRatio]image.Point{
		imagegen.AspectAuto: {1024, 1024}, // text-to-image: 1:1
		"":                  {1024, 1024}, // not normalised: auto
		imagegen.Aspect1x1:  {1024, 1024},
		imagegen.Aspect16x9: {1024, 576},
		imagegen.Aspect9x16: {576, 1024},
		imagegen.Aspect3x2:  {1024, 683},
		imagegen.Aspect2x3:  {683, 1024},
		imagegen.Aspect4x3:  {1024, 768},
		imagegen.Aspect3x4:  {768, 1024},
	} {
		t.Run(string(ratio), func(t *testing.T) {
			t.Parallel()
			img := generate(t, m, providertest.T2I("a fox", ratio))
			is.New(t).Equal(img.Bounds(), image.Rectangle{Max: want})
		})
	}
}

func TestLongSideOption(t *testing.T) {
	is := is.New(t)
	m, err := placeholder.New(placeholder.Config{LongSide: 100})
	is.NoErr(err)
	is.Equal(generate(t, m, providertest.T2I("a fox", imagegen.Aspect16x9)).Bounds().Size(), image.Pt(100, 56))
	is.Equal(generate(t, m, providertest.T2I("a fox", imagegen.Aspect2x3)).Bounds().Size(), image.Pt(67, 100))
}

// Image-to-image with auto takes the nearest ratio of the first
// reference image, and draws the references in.
func TestImageToImage(t *testing.T) {
	is := is.New(t)
	green := color.NRGBA{R: 10, G: 200, B: 30, A: 255}
	srv := serveImages(t, map[string]image.Image{
		"/tall.png": solid(300, 600, green),
		"/wide.png": solid(600, 300, green),
	})
	f, err := fetch.New(fetch.Config{AllowPrivate: true})
	is.NoErr(err)
	m, err := placeholder.New(placeholder.Config{LongSide: 200, Fetcher: f})
	is.NoErr(err)

	img := generate(t, m, providertest.I2I("make it blue", imagegen.AspectAuto, srv.URL+"/tall.png", srv.URL+"/wide.png"))
	is.Equal(img.Bounds().Size(), image.Pt(113, 200)) // 300x600 is nearest 9:16
	img = generate(t, m, providertest.I2I("make it blue", imagegen.AspectAuto, srv.URL+"/wide.png", srv.URL+"/tall.png"))
	is.Equal(img.Bounds().Size(), image.Pt(200, 113)) // the first reference decides
	img = generate(t, m, providertest.I2I("make it blue", imagegen.Aspect1x1, srv.URL+"/tall.png"))
	is.Equal(img.Bounds().Size(), image.Pt(200, 200)) // a concrete ratio wins

	is.True(count(img, green) > 500)                                                                // the reference is drawn in
	is.Equal(count(generate(t, m, providertest.T2I("make it blue", imagegen.Aspect1x1)), green), 0) // and only then
}

func TestSameInputSameBytes(t *testing.T) {
	is := is.New(t)
	gray := solid(40, 30, color.NRGBA{R: 90, G: 90, B: 90, A: 128})
	f := &fetcher{answers: map[string]func(context.Context) (image.Image, error){
		"https://img.example/a.png": func(context.Context) (image.Image, error) { return gray, nil },
	}}
	m, err := placeholder.New(placeholder.Config{LongSide: 64, Fetcher: f})
	is.NoErr(err)
	gen := func(req imagegen.Request) []byte {
		out, err := m.Generate(t.Context(), imagegen.Generation{Request: req})
		is.NoErr(err)
		return out[0].Data
	}
	is.Equal(gen(providertest.T2I("a fox", imagegen.Aspect16x9)), gen(providertest.T2I("a fox", imagegen.Aspect16x9)))
	is.True(!bytes.Equal(gen(providertest.T2I("a fox", imagegen.Aspect16x9)), gen(providertest.T2I("a cat", imagegen.Aspect16x9))))
	withRef := providertest.I2I("a fox", imagegen.Aspect16x9, "https://img.example/a.png")
	is.Equal(gen(withRef), gen(withRef))
	is.True(!bytes.Equal(gen(withRef), gen(providertest.T2I("a fox", imagegen.Aspect16x9))))
}

func TestSeedDecidesThePicture(t *testing.T) {
	is := is.New(t)
	m, err := placeholder.New(placeholder.Config{LongSide: 64})
	is.NoErr(err)
	plan, err := m.Plan(providertest.T2I("a fox", imagegen.Aspect1x1))
	is.NoErr(err)
	is.True(plan.Seeded) // the placeholder honours seeds
	gen := func(seed *int64) []byte {
		req := providertest.T2I("a fox", imagegen.Aspect1x1)
		req.Seed = seed
		out, err := m.Generate(t.Context(), imagegen.Generation{Request: req})
		is.NoErr(err)
		return out[0].Data
	}
	seed := func(n int64) *int64 { return &n }
	is.Equal(gen(seed(7)), gen(seed(7)))              // same seed and prompt: same bytes
	is.True(!bytes.Equal(gen(seed(7)), gen(seed(8)))) // another seed: another picture
	is.True(!bytes.Equal(gen(seed(0)), gen(nil)))     // seed 0 is a seed, not "none"
}

func TestBlockListRefusesFirst(t *testing.T) {
	is := is.New(t)
	f := &fetcher{}
	m, err := placeholder.New(placeholder.Config{LongSide: 16, Delay: time.Hour, Clock: noWait{t}, Fetcher: f})
	is.NoErr(err)
	for _, prompt := range []string{"some NSFW art", "nsfw", "Nsfw!"} {
		_, err = m.Generate(t.Context(), imagegen.Generation{Request: providertest.I2I(prompt, imagegen.AspectAuto, "https://img.example/a.png")})
		var me *imagegen.ModelError
		is.True(errors.As(err, &me))
		is.Equal(*me, imagegen.ModelError{Provider: "placeholder", Refused: true, Message: "the prompt contains a blocked term"})
		is.True(!strings.Contains(strings.ToLower(me.UserMessage()), "nsfw")) // the list is not revealed
	}
	is.Equal(len(f.Asked()), 0) // refused before any fetch (and, by noWait, before any delay)

	open, err := placeholder.New(placeholder.Config{LongSide: 16, BlockList: []string{}})
	is.NoErr(err)
	generate(t, open, providertest.T2I("some NSFW art", imagegen.Aspect1x1))

	custom, err := placeholder.New(placeholder.Config{LongSide: 16, BlockList: []string{"Dragon"}})
	is.NoErr(err)
	generate(t, custom, providertest.T2I("some NSFW art", imagegen.Aspect1x1))
	_, err = custom.Generate(t.Context(), imagegen.Generation{Request: providertest.T2I("a DRAGON", imagegen.Aspect1x1)})
	var me *imagegen.ModelError
	is.True(errors.As(err, &me))
	is.True(me.Refused)
}

func TestDelayWaitsOnTheClock(t *testing.T) {
	is := is.New(t)
	clock := newClock()
	m, err := placeholder.New(placeholder.Config{LongSide: 16, Delay: 2 * time.Second, Clock: clock})
	is.NoErr(err)
	done := make(chan error, 1)
	go func() {
		_, err := m.Generate(t.Context(), imagegen.Generation{Request: providertest.T2I("x", imagegen.Aspect1x1)})
		done <- err
	}()
	is.Equal(clock.waitCalled(t), 2*time.Second)
	select {
	case err := <-done:
		t.Fatalf("finished before its delay: %v", err)
	default:
	}
	clock.fire <- clock.Now()
	is.NoErr(<-done)
}

func TestCancelDuringDelay(t *testing.T) {
	is := is.New(t)
	clock := newClock()
	m, err := placeholder.New(placeholder.Config{LongSide: 16, Delay: time.Minute, Clock: clock})
	is.NoErr(err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := m.Generate(ctx, imagegen.Generation{Request: providertest.T2I("x", imagegen.Aspect1x1)})
		done <- err
	}()
	clock.waitCalled(t)
	cancel()
	err = <-done
	var me *imagegen.ModelError
	is.True(errors.As(err, &me))
	is.True(me.Retryable)
	is.Equal(me.Message, "generation interrupted")
	is.True(errors.Is(err, context.Canceled))
}

// Real fetch failures, through the guarded fetcher on loopback.
func TestUnusableReference(t *testing.T) {
	is := is.New(t)
	srv := serveImages(t, map[string]image.Image{"/ok.png": solid(8, 8, color.NRGBA{A: 255})})
	dev, err := fetch.New(fetch.Config{AllowPrivate: true})
	is.NoErr(err)
	m, err := placeholder.New(placeholder.Config{LongSide: 16, Fetcher: dev})
	is.NoErr(err)
	_, err = m.Generate(t.Context(), imagegen.Generation{Request: providertest.I2I("x", imagegen.AspectAuto, srv.URL+"/missing.png")})
	var me *imagegen.ModelError
	is.True(errors.As(err, &me))
	is.Equal(me.Provider, "placeholder")
	is.True(!me.Retryable)
	is.True(me.InvalidInput)
	is.Equal(me.UserMessage(), "image_input[0] could not be used: could not be downloaded (HTTP 404)")
	is.True(errors.Is(err, fetch.ErrStatus)) // the cause is kept for logs

	guarded, err := fetch.New(fetch.Config{}) // loopback refused
	is.NoErr(err)
	m, err = placeholder.New(placeholder.Config{LongSide: 16, Fetcher: guarded})
	is.NoErr(err)
	_, err = m.Generate(t.Context(), imagegen.Generation{Request: providertest.I2I("x", imagegen.AspectAuto, srv.URL+"/ok.png")})
	is.True(errors.As(err, &me))
	is.Equal(me.UserMessage(), "image_input[0] could not be used: address not allowed")
	is.True(!strings.Contains(me.UserMessage(), "127.0.0.1"))
}

func TestReferenceErrorMapping(t *testing.T) {
	fail := func(err error) func(context.Context) (image.Image, error) {
		return func(context.Context) (image.Image, error) { return nil, err }
	}
	for _, tc := range []struct {
		err       error
		retryable bool
		reason    string
	}{
		{fmt.Errorf("timed out: %w", context.DeadlineExceeded), false, "timed out while downloading"},
		{fmt.Errorf("%w: under 16384 bytes a second", fetch.ErrTooSlow), false, "timed out while downloading"},
		// A server error of the user's host is the user's input too, not
		// retried: a host that answers 503 after holding the fetch to
		// its timeout would hold a worker for every attempt, refunded.
		{&fetch.StatusError{Code: 503}, false, "could not be downloaded (HTTP 503)"},
		{&fetch.StatusError{Code: 429}, false, "could not be downloaded (HTTP 429)"},
		{&fetch.StatusError{Code: 403}, false, "could not be downloaded (HTTP 403)"},
		{fmt.Errorf("x: %w", fetch.ErrBlockedAddress), false, "address not allowed"},
		{fmt.Errorf("%w: 30 MB", fetch.ErrTooLarge), false, "too large"},
		{fmt.Errorf("%w: 9000x9000", fetch.ErrTooManyPixels), false, "too many pixels"},
		{fmt.Errorf("%w: webp", fetch.ErrNotImage), false, "not a supported image"},
		{fetch.ErrTooManyRedirects, false, "too many redirects"},
		{fetch.ErrBadURL, false, "not an http or https URL"},
		{errors.New("connection reset by 10.0.0.7"), false, "could not be downloaded"},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			is := is.New(t)
			f := &fetcher{answers: map[string]func(context.Context) (image.Image, error){
				"https://a.example/1.png": func(context.Context) (image.Image, error) { return solid(4, 4, color.NRGBA{A: 255}), nil },
				"https://a.example/2.png": fail(tc.err),
				"https://a.example/3.png": func(context.Context) (image.Image, error) { return solid(4, 4, color.NRGBA{A: 255}), nil },
			}}
			m, err := placeholder.New(placeholder.Config{LongSide: 16, Fetcher: f})
			is.NoErr(err)
			_, err = m.Generate(t.Context(), imagegen.Generation{Request: providertest.I2I("x", imagegen.AspectAuto,
				"https://a.example/1.png", "https://a.example/2.png", "https://a.example/3.png")})
			var me *imagegen.ModelError
			is.True(errors.As(err, &me))
			is.Equal(me.Retryable, tc.retryable)
			is.Equal(me.InvalidInput, !tc.retryable)
			is.Equal(me.UserMessage(), "image_input[1] could not be used: "+tc.reason)
			is.True(errors.Is(err, tc.err))
			is.True(slices.Contains(f.Asked(), "https://a.example/2.png")) // fetched at once: the others may or may not have started
		})
	}
}

func TestCancelDuringFetch(t *testing.T) {
	is := is.New(t)
	ctx, cancel := context.WithCancel(t.Context())
	f := &fetcher{answers: map[string]func(context.Context) (image.Image, error){
		"https://a.example/1.png": func(ctx context.Context) (image.Image, error) {
			cancel() // the worker stops while the image downloads
			return nil, fmt.Errorf("stopped: %w", ctx.Err())
		},
	}}
	m, err := placeholder.New(placeholder.Config{LongSide: 16, Fetcher: f})
	is.NoErr(err)
	_, err = m.Generate(ctx, imagegen.Generation{Request: providertest.I2I("x", imagegen.AspectAuto, "https://a.example/1.png")})
	var me *imagegen.ModelError
	is.True(errors.As(err, &me))
	is.True(me.Retryable) // not the image's fault: the task runs again
	is.True(!me.InvalidInput)
	is.Equal(me.Message, "generation interrupted")
}

func TestNoFetcher(t *testing.T) {
	is := is.New(t)
	m, err := placeholder.New(placeholder.Config{LongSide: 16})
	is.NoErr(err)
	_, err = m.Generate(t.Context(), imagegen.Generation{Request: providertest.I2I("x", imagegen.AspectAuto, "https://a.example/1.png")})
	var me *imagegen.ModelError
	is.True(errors.As(err, &me))
	is.True(!me.Retryable)
	is.Equal(me.UserMessage(), "reference images are unavailable on this server")
}

func TestUnknownRatioIsAnError(t *testing.T) {
	is := is.New(t)
	m, err := placeholder.New(placeholder.Config{LongSide: 16})
	is.NoErr(err)
	_, err = m.Generate(t.Context(), imagegen.Generation{Request: providertest.T2I("x", "5:4")})
	var me *imagegen.ModelError
	is.True(errors.As(err, &me))
	is.True(!me.Retryable)
}

func TestPlan(t *testing.T) {
	is := is.New(t)
	m, err := placeholder.New(placeholder.Config{})
	is.NoErr(err)
	plan, err := m.Plan(providertest.T2I("x", imagegen.AspectAuto))
	is.NoErr(err)
	is.Equal(plan, imagegen.Plan{Model: "placeholder", Cost: 1, Seeded: true})
	m, err = placeholder.New(placeholder.Config{Cost: 3})
	is.NoErr(err)
	plan, err = m.Plan(imagegen.Request{})
	is.NoErr(err)
	is.Equal(plan, imagegen.Plan{Model: "placeholder", Cost: 3, Seeded: true})
}

func TestOptionsValidation(t *testing.T) {
	for _, tc := range []struct {
		o     placeholder.Config
		field string // "" when valid
	}{
		{placeholder.Config{LongSide: 8}, "LongSide"},
		{placeholder.Config{LongSide: 15}, "LongSide"},
		{placeholder.Config{LongSide: 4097}, "LongSide"},
		{placeholder.Config{LongSide: -1}, "LongSide"},
		{placeholder.Config{Cost: 4}, "Cost"},
		{placeholder.Config{Cost: -1}, "Cost"},
		{placeholder.Config{Delay: -time.Second}, "Delay"},
		{placeholder.Config{LongSide: 16, Cost: 3}, ""},
		{placeholder.Config{LongSide: 4096, Cost: 1}, ""},
	} {
		t.Run(fmt.Sprintf("%+v", tc.o), func(t *testing.T) {
			is := is.New(t)
			_, err := placeholder.New(tc.o)
			if tc.field == "" {
				is.NoErr(err)
				return
			}
			is.True(err != nil)
			is.True(strings.Contains(err.Error(), "Config."+tc.field))
		})
	}
}

func BenchmarkGenerate1024(b *testing.B) {
	m, err := placeholder.New(placeholder.Config{})
	if err != nil {
		b.Fatal(err)
	}
	g := imagegen.Generation{Request: providertest.T2I("a lighthouse at dusk", imagegen.Aspect1x1)}
	for b.Loop() {
		if _, err := m.Generate(b.Context(), g); err != nil {
			b.Fatal(err)
		}
	}
}
