package stability_test

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	gifenc "image/gif"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
	"github.com/imagegen/imagegen/model/stability"
)

var ctx = context.Background()

// newModel returns an adapter pointed at f, with a recording clock.
func newModel(t *testing.T, f *fake, c stability.Config) (*stability.Model, *providertest.InstantClock) {
	t.Helper()
	clock := providertest.Configure(&c.Config, f.srv.URL, key)
	return providertest.MustNew(t, stability.New, c), clock
}

func TestTextToImage(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	m, clock := newModel(t, f, stability.Config{})
	const prompt = "a lighthouse on a cliff"

	plan, err := m.Plan(providertest.T2I(prompt, imagegen.Aspect16x9))
	is.NoErr(err)
	is.Equal(plan, imagegen.Plan{Model: "stability/core", Cost: 2})

	imgs, err := providertest.Generate(ctx, m, providertest.T2I(prompt, imagegen.Aspect16x9))
	is.NoErr(err)
	is.Equal(len(imgs), 1)
	is.Equal(imgs[0].ContentType, "image/png")
	is.Equal(providertest.SizeOf(t, imgs[0]), provider.Size{W: 1344, H: 756}) // 1344x768 cropped to exactly 16:9

	calls := f.Calls()
	is.Equal(len(calls), 1)
	c := calls[0]
	is.Equal(c.path, corePath)
	is.Equal(c.header.Get("Authorization"), "Bearer "+key)
	is.Equal(c.header.Get("Accept"), "application/json")
	is.True(strings.HasPrefix(c.header.Get("Content-Type"), "multipart/form-data; boundary="))
	// WIRE.md's example request, exactly.
	is.Equal(c.fields, map[string][]string{"prompt": {prompt}, "aspect_ratio": {"16:9"}, "output_format": {"png"}})
	is.Equal(len(c.files), 0)
	is.Equal(len(clock.Waits()), 0)
}

func TestTextToImageSD3AndUltra(t *testing.T) {
	for _, tc := range []struct {
		model  string
		cfg    stability.Config
		path   string
		cost   int64
		fields map[string][]string
	}{
		{"sd3.5-large", stability.Config{StylePreset: "photographic"}, sd3Path, 3, map[string][]string{
			"prompt": {"a fox"}, "model": {"sd3.5-large"}, "mode": {"text-to-image"}, "aspect_ratio": {"2:3"}, "style_preset": {"photographic"}, "output_format": {"png"}}},
		{"sd3.5-flash", stability.Config{}, sd3Path, 1, map[string][]string{
			"prompt": {"a fox"}, "model": {"sd3.5-flash"}, "mode": {"text-to-image"}, "aspect_ratio": {"2:3"}, "output_format": {"png"}}},
		{"ultra", stability.Config{}, ultra, 3, map[string][]string{
			"prompt": {"a fox"}, "aspect_ratio": {"2:3"}, "output_format": {"png"}}},
	} {
		t.Run(tc.model, func(t *testing.T) {
			is := is.New(t)
			f := newFake(t)
			tc.cfg.Model = tc.model
			m, _ := newModel(t, f, tc.cfg)
			plan, err := m.Plan(providertest.T2I("a fox", imagegen.Aspect2x3))
			is.NoErr(err)
			is.Equal(plan, imagegen.Plan{Model: "stability/" + tc.model, Cost: tc.cost})
			imgs, err := providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect2x3))
			is.NoErr(err)
			is.Equal(providertest.SizeOf(t, imgs[0]), provider.Size{W: 810, H: 1215}) // 832x1216 cropped to exactly 2:3
			c := f.Calls()[0]
			is.Equal(c.path, tc.path)
			is.Equal(c.fields, tc.fields)
		})
	}
}

func TestImageToImage(t *testing.T) {
	photo := providertest.JPEG(1200, 800)
	for _, tc := range []struct {
		model  string
		path   string
		fields map[string][]string
	}{
		{"sd3.5-medium", sd3Path, map[string][]string{"prompt": {"make it winter"}, "model": {"sd3.5-medium"}, "mode": {"image-to-image"}, "strength": {"0.35"}, "output_format": {"png"}}},
		{"ultra", ultra, map[string][]string{"prompt": {"make it winter"}, "strength": {"0.35"}, "output_format": {"png"}}},
	} {
		t.Run(tc.model, func(t *testing.T) {
			is := is.New(t)
			f := newFake(t)
			fetcher := &providertest.Fetcher{Images: map[string]providertest.Image{
				"https://img.example/photo.jpg": {Data: photo, ContentType: "application/octet-stream"}, // the bytes say JPEG
			}}
			m, _ := newModel(t, f, stability.Config{Model: tc.model, Fetcher: fetcher, Strength: 0.35})
			req := providertest.I2I("make it winter", imagegen.Aspect16x9, "https://img.example/photo.jpg")
			_, err := m.Plan(req)
			is.NoErr(err)
			imgs, err := providertest.Generate(ctx, m, req)
			is.NoErr(err)
			is.Equal(fetcher.Asked(), req.ImageInput) // through the guarded fetcher
			// The answer has the init image's shape (3:2), cropped to 16:9.
			is.Equal(providertest.SizeOf(t, imgs[0]), provider.Size{W: 1200, H: 675})

			c := f.Calls()[0]
			is.Equal(c.path, tc.path)
			is.Equal(c.fields, tc.fields) // no aspect_ratio with an init image
			is.Equal(len(c.files), 1)
			is.Equal(c.files[0].Name, "image")
			is.Equal(c.files[0].Filename, "image.jpg")
			is.Equal(c.files[0].ContentType, "image/jpeg")
			is.Equal(c.files[0].Data, photo)
		})
	}
}

func TestAutoImageToImageFollowsTheReference(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	fetcher := &providertest.Fetcher{Images: map[string]providertest.Image{
		"https://img.example/tall.png": {Data: providertest.PNG(600, 1000)}, // 0.6: nearest 9:16
	}}
	m, _ := newModel(t, f, stability.Config{Model: "sd3.5-large", Fetcher: fetcher})
	imgs, err := providertest.Generate(ctx, m, providertest.I2I("x", imagegen.AspectAuto, "https://img.example/tall.png"))
	is.NoErr(err)
	got := providertest.SizeOf(t, imgs[0])
	is.True(got.Is(imagegen.NearestAspectRatio(600, 1000))) // the first reference's nearest ratio
	is.Equal(got, provider.Size{W: 558, H: 992})            // 9:16, cropped from the 600x1000 answer
	is.Equal(f.Calls()[0].field("strength"), "0.5")         // the default strength
}

func TestReferenceFormats(t *testing.T) {
	is := is.New(t)
	var gif bytes.Buffer
	providertest.Must(t, gifenc.Encode(&gif, image.NewPaletted(image.Rect(0, 0, 300, 200), color.Palette{color.Black, color.White}), nil))
	webp := append([]byte("RIFF\x24\x00\x00\x00WEBPVP8 "), make([]byte, 32)...) // a header is all the fake reads
	fetcher := &providertest.Fetcher{Images: map[string]providertest.Image{
		"https://img.example/a.gif":  {Data: gif.Bytes(), ContentType: "image/gif"},
		"https://img.example/b.webp": {Data: webp, ContentType: "image/webp"},
	}}
	f := newFake(t)
	m, _ := newModel(t, f, stability.Config{Model: "sd3.5-large-turbo", Fetcher: fetcher})

	// GIF is not taken: converted to PNG.
	imgs, err := providertest.Generate(ctx, m, providertest.I2I("x", imagegen.AspectAuto, "https://img.example/a.gif"))
	is.NoErr(err)
	is.Equal(providertest.SizeOf(t, imgs[0]), provider.Size{W: 300, H: 200}) // 3:2, as the reference
	c := f.Calls()[0]
	is.Equal(c.files[0].ContentType, "image/png")
	is.Equal(c.files[0].Filename, "image.png")

	// WebP is sent as it is; its size is unknown, so auto crops to the
	// ratio nearest the answer's own size (which follows the reference).
	f.answerWith(provider.Size{W: 1216, H: 832})
	imgs, err = providertest.Generate(ctx, m, providertest.I2I("x", imagegen.AspectAuto, "https://img.example/b.webp"))
	is.NoErr(err)
	is.Equal(providertest.SizeOf(t, imgs[0]), provider.Size{W: 1215, H: 810}) // 3:2
	c = f.Calls()[1]
	is.Equal(c.files[0].ContentType, "image/webp")
	is.Equal(c.files[0].Filename, "image.webp")
	is.Equal(c.files[0].Data, webp)
}

func TestImageToImageIsPlannedOnlyWhereItRuns(t *testing.T) {
	fetcher := &providertest.Fetcher{}
	for _, tc := range []struct {
		name  string
		cfg   stability.Config
		req   imagegen.Request
		field string
		msg   string
	}{
		{"core has no init image", stability.Config{Fetcher: fetcher}, providertest.I2I("x", imagegen.Aspect1x1, "https://img.example/a.png"),
			"scene", "image-to-image is not supported by model core"},
		{"no fetcher", stability.Config{Model: "ultra"}, providertest.I2I("x", imagegen.Aspect1x1, "https://img.example/a.png"),
			"scene", "image-to-image is not available on this server"},
		{"one reference only", stability.Config{Model: "ultra", Fetcher: fetcher}, providertest.I2I("x", imagegen.Aspect1x1, "https://img.example/a.png", "https://img.example/b.png"),
			"image_input", "model stability/ultra takes one reference image"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			f := newFake(t)
			m, _ := newModel(t, f, tc.cfg)
			_, err := m.Plan(tc.req)
			var ve *imagegen.ValidationError
			is.True(errors.As(err, &ve))
			is.Equal(ve.Field, tc.field)
			is.Equal(ve.Message, tc.msg)
			is.True(errors.Is(err, imagegen.ErrInvalidParams))

			_, err = m.Generate(ctx, imagegen.Generation{Request: tc.req}) // even if not planned
			is.True(!providertest.ModelError(t, err).Retryable)
			is.Equal(len(f.Calls()), 0)
		})
	}
}

func TestReferenceFailures(t *testing.T) {
	fetcher := &providertest.Fetcher{Images: map[string]providertest.Image{
		"https://img.example/tiny.png":  {Data: providertest.PNG(40, 200)},
		"https://img.example/notes.txt": {Data: []byte("hello"), ContentType: "text/plain"},
		"https://10.0.0.1/a.png":        {Err: errors.New("address not allowed")},
	}}
	for _, tc := range []struct{ url, msg string }{
		{"https://10.0.0.1/a.png", "image_input[0] could not be downloaded"},
		{"https://img.example/notes.txt", "image_input[0] is not a supported image"},
		{"https://img.example/tiny.png", "image_input[0] is too small for this provider (40x200; every side must be at least 64 pixels)"},
	} {
		t.Run(tc.url, func(t *testing.T) {
			is := is.New(t)
			f := newFake(t)
			m, _ := newModel(t, f, stability.Config{Model: "ultra", Fetcher: fetcher})
			_, err := providertest.Generate(ctx, m, providertest.I2I("x", imagegen.Aspect1x1, tc.url))
			me := providertest.ModelError(t, err)
			is.True(me.InvalidInput && !me.Retryable && !me.Refused)
			is.Equal(me.Message, tc.msg)
			is.Equal(len(f.Calls()), 0) // the provider was not called
		})
	}
}

func TestEveryAspectRatio(t *testing.T) {
	type want struct {
		sent   string
		result provider.Size
	}
	s := func(w, h int) provider.Size { return provider.Size{W: w, H: h} }
	table := map[imagegen.AspectRatio]want{
		imagegen.AspectAuto: {"1:1", s(1024, 1024)},
		imagegen.Aspect1x1:  {"1:1", s(1024, 1024)},
		imagegen.Aspect3x2:  {"3:2", s(1215, 810)},  // 1216x832
		imagegen.Aspect2x3:  {"2:3", s(810, 1215)},  // 832x1216
		imagegen.Aspect16x9: {"16:9", s(1344, 756)}, // 1344x768
		imagegen.Aspect9x16: {"9:16", s(756, 1344)}, // 768x1344
		imagegen.Aspect4x3:  {"5:4", s(1088, 816)},  // not in the API: 5:4, 1088x896, cropped
		imagegen.Aspect3x4:  {"4:5", s(816, 1088)},  // not in the API: 4:5, 896x1088, cropped
	}
	if len(table) != len(imagegen.AspectRatios())+1 {
		t.Fatalf("the table misses a ratio of %v", imagegen.AspectRatios())
	}
	for _, model := range []string{"core", "ultra", "sd3.5-large"} {
		f := newFake(t)
		m, _ := newModel(t, f, stability.Config{Model: model})
		for ratio, w := range table {
			t.Run(model+" "+string(ratio), func(t *testing.T) {
				t.Parallel()
				is := is.New(t)
				prompt := "a fox, " + model + " " + string(ratio)
				imgs, err := providertest.Generate(ctx, m, providertest.T2I(prompt, ratio))
				is.NoErr(err)
				sent := ""
				for _, c := range f.Calls() {
					if c.field("prompt") == prompt {
						sent = c.field("aspect_ratio")
					}
				}
				is.Equal(sent, w.sent) // the aspect_ratio sent
				got := providertest.SizeOf(t, imgs[0])
				is.Equal(got, w.result) // the final image
				want := ratio
				if ratio == imagegen.AspectAuto {
					want = imagegen.Aspect1x1 // auto is 1:1 for text-to-image
				}
				is.True(got.Is(want)) // exactly the ratio
			})
		}
	}
}

func TestContentFiltered(t *testing.T) {
	is := is.New(t)
	f := newFake(t, answer{Status: 200, Body: example(t, "generate.response.content-filtered.json")})
	m, clock := newModel(t, f, stability.Config{})
	_, err := providertest.Generate(ctx, m, providertest.T2I("something not allowed", imagegen.Aspect1x1))
	me := providertest.ModelError(t, err)
	is.True(me.Refused)
	is.True(!me.Retryable && !me.Misconfigured)
	is.Equal(me.Provider, "stability")
	is.Equal(me.UserMessage(), "refused by content policy: the generated image was blocked by the provider's content filter")
	is.True(strings.Contains(me.Err.Error(), "CONTENT_FILTERED"))
	is.Equal(len(f.Calls()), 1) // not retried
	is.Equal(len(clock.Waits()), 0)
}

func TestContentModeration(t *testing.T) {
	is := is.New(t)
	f := newFake(t, answer{Status: 403, Body: example(t, "error.403.content_moderation.json")})
	m, clock := newModel(t, f, stability.Config{})
	_, err := providertest.Generate(ctx, m, providertest.T2I("something not allowed", imagegen.Aspect1x1))
	me := providertest.ModelError(t, err)
	is.True(me.Refused)
	is.True(!me.Retryable && !me.Misconfigured) // a 403, but not the operator's fault
	is.Equal(me.UserMessage(), "refused by content policy: the prompt or image was rejected by the provider's safety system")
	is.True(strings.Contains(me.Err.Error(), "content_moderation"))
	is.True(!strings.Contains(me.UserMessage(), "charged")) // the provider's words stay in the log
	is.Equal(len(f.Calls()), 1)
	is.Equal(len(clock.Waits()), 0)
}

func TestRateLimitThenSuccess(t *testing.T) {
	is := is.New(t)
	f := newFake(t, answer{Status: 429, Header: map[string]string{"Retry-After": "7"}, Body: example(t, "error.429.rate_limit_exceeded.json")})
	m, clock := newModel(t, f, stability.Config{})
	imgs, err := providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
	is.NoErr(err)
	is.Equal(len(imgs), 1)
	is.Equal(len(f.Calls()), 2)
	is.Equal(clock.Waits(), []time.Duration{7 * time.Second}) // Retry-After, on the injected clock
}

func TestRateLimitWithoutRetryAfterWaitsThePenalty(t *testing.T) {
	is := is.New(t)
	f := newFake(t, answer{Status: 429, Body: example(t, "error.429.rate_limit_exceeded.json")})
	m, clock := newModel(t, f, stability.Config{})
	_, err := providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
	is.NoErr(err)
	is.Equal(clock.Waits(), []time.Duration{60 * time.Second}) // the documented time-out

	// With less time left than the penalty, it gives up at once, retryable.
	f = newFake(t, answer{Status: 429, Body: example(t, "error.429.rate_limit_exceeded.json")})
	m, clock = newModel(t, f, stability.Config{})
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err = providertest.Generate(tctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
	me := providertest.ModelError(t, err)
	is.True(me.Retryable)
	is.Equal(me.Message, provider.MsgBusy)
	is.Equal(len(f.Calls()), 1)
	is.Equal(len(clock.Waits()), 0)
}

func TestServerErrorThenSuccess(t *testing.T) {
	is := is.New(t)
	body := example(t, "error.500.internal_error.json")
	f := newFake(t, answer{Status: 500, Body: body}, answer{Status: 503, Header: map[string]string{"Retry-After": "3"}, Body: body})
	m, clock := newModel(t, f, stability.Config{})
	imgs, err := providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
	is.NoErr(err)
	is.Equal(len(imgs), 1)
	is.Equal(len(f.Calls()), 3)
	waits := clock.Waits()
	is.Equal(len(waits), 2)
	is.True(waits[0] >= 500*time.Millisecond && waits[0] <= time.Second) // backoff with jitter
	is.Equal(waits[1], 3*time.Second)                                    // Retry-After
}

func TestServerErrorsRunOut(t *testing.T) {
	is := is.New(t)
	body := example(t, "error.500.internal_error.json")
	f := newFake(t, answer{Status: 500, Body: body}, answer{Status: 500, Body: body}, answer{Status: 500, Body: body})
	m, _ := newModel(t, f, stability.Config{Config: provider.Config{MaxRetries: 2}})
	_, err := providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
	me := providertest.ModelError(t, err)
	is.True(me.Retryable) // the task queue may try again later
	is.Equal(me.Message, provider.MsgUnavailable)
	is.True(strings.Contains(me.Err.Error(), "internal_error"))
	is.Equal(len(f.Calls()), 3) // bounded: 1 + MaxRetries
}

func TestTimeout(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	f.hang = make(chan struct{})
	defer close(f.hang)
	m, _ := newModel(t, f, stability.Config{})
	tctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := providertest.Generate(tctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
	is.True(time.Since(start) < 5*time.Second) // bounded by the deadline
	me := providertest.ModelError(t, err)
	is.True(me.Retryable)
	is.Equal(me.Message, provider.MsgTimeout)
	is.True(errors.Is(err, context.DeadlineExceeded))
	is.Equal(len(f.Calls()), 1) // no retry once the deadline has passed
}

func TestBadAPIKey(t *testing.T) {
	is := is.New(t)
	const wrong = "sk-WRONGKEY-9876543210zyxwvutsrqponmlkjih"
	f := newFake(t)
	m, clock := newModel(t, f, stability.Config{Config: provider.Config{APIKey: wrong}})
	_, err := providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
	me := providertest.ModelError(t, err)
	is.True(me.Misconfigured) // an operator error: a fallback chain moves on
	is.True(!me.Retryable && !me.Refused && !me.InvalidInput)
	is.Equal(me.UserMessage(), "the image service is misconfigured") // not the user's fault
	is.True(strings.Contains(me.Err.Error(), "HTTP 401"))
	is.True(strings.Contains(me.Err.Error(), "unauthorized"))
	is.True(!strings.Contains(err.Error(), wrong)) // the echoed key is scrubbed
	is.Equal(len(f.Calls()), 1)
	is.Equal(len(clock.Waits()), 0)
}

// TestErrorBodies maps every documented error (WIRE.md, "Errors").
func TestErrorBodies(t *testing.T) {
	for _, tc := range []struct {
		name                                   string
		status                                 int
		body                                   []byte
		retryable, refused, invalid, misconfig bool
		msg, cause                             string
	}{
		{"400 bad_request", 400, example(t, "error.400.bad_request.json"), false, false, false, false, provider.MsgRejected, "HTTP 400 (bad_request id=a1b2c3d4e5f6a1b2c3d4e5f6a1b2c3d4): prompt: is required"},
		{"400 about the image", 400, []byte(`{"id":"e1","name":"bad_request","errors":["image: must be at least 64 pixels on each side"]}`), false, false, true, false, "the reference image could not be used by the image provider", "image: must be"},
		{"402 payment_required", 402, []byte(`{"id":"e2","name":"payment_required","errors":["You lack sufficient credits to make this request."]}`), false, false, false, true, provider.MsgMisconfigured, "payment_required"},
		{"403 other", 403, []byte(`{"id":"e3","name":"forbidden","errors":["access denied"]}`), false, false, false, true, provider.MsgMisconfigured, "HTTP 403"},
		{"404 generation_not_found", 404, example(t, "error.404.generation_not_found.json"), false, false, false, true, provider.MsgMisconfigured, "generation_not_found"},
		{"413 payload too large", 413, []byte(`<html><body>413 Request Entity Too Large</body></html>`), false, false, true, false, "the reference image is too large for the image provider", "HTTP 413"},
		{"422 invalid_language", 422, []byte(`{"id":"e4","name":"invalid_language","errors":["English is the only supported language for this service."]}`), false, false, false, false, "the image provider accepts prompts in English only", "invalid_language"},
		{"422 other", 422, []byte(`{"id":"e5","name":"unprocessable","errors":["prompt: rejected"]}`), false, false, false, false, provider.MsgRejected, "HTTP 422"},
		{"429 rate_limit_exceeded", 429, example(t, "error.429.rate_limit_exceeded.json"), true, false, false, false, provider.MsgBusy, "HTTP 429 (rate_limit_exceeded): You have exceeded"},
		{"500 internal_error", 500, example(t, "error.500.internal_error.json"), true, false, false, false, provider.MsgUnavailable, "internal_error"},
		{"legacy v1 body", 400, []byte(`{"id":"e6","name":"invalid_prompts","message":"prompt is empty"}`), false, false, false, false, provider.MsgRejected, "invalid_prompts id=e6): prompt is empty"},
		{"not JSON", 502, []byte(`<html>Bad gateway</html>`), true, false, false, false, provider.MsgUnavailable, "Bad gateway"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			f := newFake(t, answer{Status: tc.status, Body: tc.body})
			m, _ := newModel(t, f, stability.Config{Config: provider.Config{MaxRetries: -1}})
			_, err := providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
			me := providertest.ModelError(t, err)
			is.Equal(me.Retryable, tc.retryable)
			is.Equal(me.Refused, tc.refused)
			is.Equal(me.InvalidInput, tc.invalid)
			is.Equal(me.Misconfigured, tc.misconfig)
			is.Equal(me.Message, tc.msg)
			is.True(strings.Contains(me.Err.Error(), tc.cause)) // the provider's words, for the log
		})
	}
}

func TestAnswersWithoutAnImage(t *testing.T) {
	for _, tc := range []struct{ name, body string }{
		{"no image", `{"finish_reason":"SUCCESS","seed":1}`},
		{"unknown finish reason", `{"image":"iVBORw0KGgo=","finish_reason":"ERROR","seed":1}`},
		{"not base64", `{"image":"***","finish_reason":"SUCCESS","seed":1}`},
		{"not an image", `{"image":"aGVsbG8=","finish_reason":"SUCCESS","seed":1}`},
		{"not JSON", `<html>ok</html>`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			f := newFake(t, answer{Status: 200, Body: []byte(tc.body)})
			m, _ := newModel(t, f, stability.Config{Config: provider.Config{MaxRetries: -1}})
			_, err := providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
			me := providertest.ModelError(t, err)
			is.True(me.Retryable && !me.Refused)
			is.Equal(me.Message, provider.MsgBadAnswer)
		})
	}
}

func TestKeyNeverShows(t *testing.T) {
	is := is.New(t)
	c := stability.Config{Config: provider.Config{APIKey: key}, Model: "ultra", Fetcher: &providertest.Fetcher{}}
	f := newFake(t, answer{Status: 503, Body: []byte("upstream said " + key)})
	m, _ := newModel(t, f, c)
	providertest.NoSecretInAdapter(t, key, c, m)
	_, err := providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
	is.NoErr(err)
	f = newFake(t, answer{Status: 400, Body: []byte(`{"id":"e7","name":"bad_request","errors":["authorization: ` + key + ` is not allowed here"]}`)})
	m, _ = newModel(t, f, c)
	_, err = providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
	is.True(err != nil)
	providertest.NoSecretAnywhere(t, key, err)
	is.True(!strings.Contains(err.Error(), key))
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
