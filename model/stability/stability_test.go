package stability_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"image"
	"image/color"
	gifenc "image/gif"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
	"github.com/imagegen/imagegen/model/stability"
)

// The scenarios every adapter must pass, as the Stable Image API plays
// them.
func TestConformance(t *testing.T) {
	internal := providertest.Spec(t, "error.500.internal_error.json")
	providertest.Run(t, providertest.Harness[*fake, stability.Config, *stability.Model]{
		Provider: "stability", Key: key, New: stability.New, NewFake: newFake, NewModel: newModel,
		Constructions: constructions(),

		TextToImage:  textToImage(),
		ImageToImage: imageToImage(t),
		Unplannable:  unplannable(),
		AspectRatios: ratios(),
		Refusals: []failure{
			{Name: "content filtered", Answers: []answer{{Status: 200, Body: providertest.Spec(t, "generate.response.content-filtered.json")}},
				Want: providertest.Outcome{Message: "the generated image was blocked by the provider's content filter"}, Causes: []string{"CONTENT_FILTERED"}, Calls: []string{"core"}},
			{Name: "content moderation", Answers: []answer{{Status: 403, Body: providertest.Spec(t, "error.403.content_moderation.json")}}, // a 403, but not the operator's fault
				Causes: []string{"content_moderation"}, Calls: []string{"core"}},
		},
		RateLimited: []success{
			{Name: "Retry-After", Answers: []answer{{Status: 429, Header: map[string]string{"Retry-After": "7"}, Body: providertest.Spec(t, "error.429.rate_limit_exceeded.json")}},
				Calls: []string{"core", "core"}, Waits: providertest.Waits(7 * time.Second)},
			{Name: "no Retry-After: the documented time-out", Answers: []answer{{Status: 429, Body: providertest.Spec(t, "error.429.rate_limit_exceeded.json")}},
				Calls: []string{"core", "core"}, Waits: providertest.Waits(60 * time.Second)},
		},
		ServerErrors: []success{{Answers: []answer{{Status: 500, Body: internal}, {Status: 503, Header: map[string]string{"Retry-After": "3"}, Body: internal}},
			Calls: []string{"core", "core", "core"}, Waits: []providertest.Wait{providertest.Backoff(0), {Min: 3 * time.Second, Max: 3 * time.Second}}}},
		Timeouts: []failure{{Answers: []answer{{Hang: true}}, Calls: []string{"core"}}},
		BadKey:   failure{Causes: []string{"HTTP 401", "unauthorized"}, Calls: []string{"core"}},
		// The default client sets no timeout on the answer (the
		// generation call lasts as long as the generation): a context
		// without a deadline is bounded by Config.MaxDuration.
		Failures: append(failures(t), failure{
			Name:    "no deadline: bounded by Config.MaxDuration",
			Config:  stability.Config{Config: provider.Config{MaxDuration: 100 * time.Millisecond}},
			Answers: []answer{{Hang: true}},
			Want:    providertest.Outcome{Retryable: true, Message: provider.MsgTimeout},
			Is:      context.DeadlineExceeded,
			Calls:   []string{"core"},
		}),
		// Every Stable Image service takes a seed, as the form field "seed".
		SentSeed: func(t *testing.T, f *fake) *int64 {
			calls := f.Calls()
			return calls[len(calls)-1].seed(t)
		},
	})
}

func constructions() []providertest.Construction[stability.Config] {
	k := provider.Config{APIKey: key}
	return []providertest.Construction[stability.Config]{
		{Name: "no key", Err: "stability: Config.APIKey is required"},
		{Name: "unknown model", Config: stability.Config{Config: k, Model: "stable-diffusion-xl-1024-v1-0"}, Err: `stability: Config.Model "stable-diffusion-xl-1024-v1-0" is not supported (one of core, ultra, sd3.5-large,`},
		{Name: "strength above 1", Config: stability.Config{Config: k, Strength: 1.5}, Err: "stability: Config.Strength must be more than 0 and at most 1 (got 1.5)"},
		{Name: "negative strength", Config: stability.Config{Config: k, Strength: -0.1}, Err: "stability: Config.Strength must be more than 0"},
		{Name: "unknown style", Config: stability.Config{Config: k, StylePreset: "watercolour"}, Err: `stability: Config.StylePreset "watercolour" is not one of the API's presets`},
		{Name: "style on ultra", Config: stability.Config{Config: k, Model: "ultra", StylePreset: "anime"}, Err: `stability: Config.StylePreset is not taken by this model`},
		{Name: "bad cost", Config: stability.Config{Config: provider.Config{APIKey: key, Cost: 4}}, Err: "stability: Config.Cost must be 1 to 3"},
		// Config.Cost wins over the model's default.
		{Name: "ultra", Config: stability.Config{Config: provider.Config{APIKey: key, Cost: 1}, Model: "ultra"}, Model: "stability/ultra", Cost: 1},
	}
}

// success and failure are the conformance scenarios on this package's fake.
type (
	success = providertest.Success[*fake, stability.Config]
	failure = providertest.Failure[*fake, stability.Config]
)

func textToImage() []success {
	const prompt = "a lighthouse on a cliff"
	twoThree := provider.Size{W: 810, H: 1215} // 832x1216 cropped to exactly 2:3
	fields := func(t *testing.T, f *fake, want map[string][]string) { is.New(t).Equal(f.Calls()[0].fields, want) }
	return []success{
		{Name: "core", Request: providertest.T2I(prompt, imagegen.Aspect16x9), Plan: imagegen.Plan{Model: "stability/core", Cost: 2, Seeded: true},
			Size: provider.Size{W: 1344, H: 756}, Calls: []string{"core"}, // 1344x768 cropped to exactly 16:9
			Check: func(t *testing.T, f *fake) {
				is := is.New(t)
				c := f.Calls()[0]
				is.Equal(c.header.Get("Authorization"), "Bearer "+key)
				is.Equal(c.header.Get("Accept"), "application/json")
				is.True(strings.HasPrefix(c.header.Get("Content-Type"), "multipart/form-data; boundary="))
				// The API reference's example request, exactly.
				is.Equal(c.fields, map[string][]string{"prompt": {prompt}, "aspect_ratio": {"16:9"}, "output_format": {"png"}})
				is.Equal(len(c.files), 0)
			}},
		{Name: "sd3.5-large", Config: stability.Config{Model: "sd3.5-large", StylePreset: "photographic"}, Request: providertest.T2I("a fox", imagegen.Aspect2x3),
			Plan: imagegen.Plan{Model: "stability/sd3.5-large", Cost: 3, Seeded: true}, Size: twoThree, Calls: []string{"sd3"},
			Check: func(t *testing.T, f *fake) {
				fields(t, f, map[string][]string{"prompt": {"a fox"}, "model": {"sd3.5-large"}, "mode": {"text-to-image"}, "aspect_ratio": {"2:3"}, "style_preset": {"photographic"}, "output_format": {"png"}})
			}},
		{Name: "sd3.5-flash", Config: stability.Config{Model: "sd3.5-flash"}, Request: providertest.T2I("a fox", imagegen.Aspect2x3),
			Plan: imagegen.Plan{Model: "stability/sd3.5-flash", Cost: 1, Seeded: true}, Size: twoThree, Calls: []string{"sd3"},
			Check: func(t *testing.T, f *fake) {
				fields(t, f, map[string][]string{"prompt": {"a fox"}, "model": {"sd3.5-flash"}, "mode": {"text-to-image"}, "aspect_ratio": {"2:3"}, "output_format": {"png"}})
			}},
		{Name: "ultra", Config: stability.Config{Model: "ultra"}, Request: providertest.T2I("a fox", imagegen.Aspect2x3),
			Plan: imagegen.Plan{Model: "stability/ultra", Cost: 3, Seeded: true}, Size: twoThree, Calls: []string{"ultra"},
			Check: func(t *testing.T, f *fake) {
				fields(t, f, map[string][]string{"prompt": {"a fox"}, "aspect_ratio": {"2:3"}, "output_format": {"png"}})
			}},
	}
}

func imageToImage(t *testing.T) []success {
	photo := providertest.JPEG(1200, 800)
	var gif bytes.Buffer
	providertest.Must(t, gifenc.Encode(&gif, image.NewPaletted(image.Rect(0, 0, 300, 200), color.Palette{color.Black, color.White}), nil))
	webp := append([]byte("RIFF\x24\x00\x00\x00WEBPVP8 "), make([]byte, 32)...) // a header is all the fake reads
	fetcher := &providertest.Fetcher{Images: map[string]providertest.Image{
		"https://img.example/photo.jpg": {Data: photo, ContentType: "application/octet-stream"}, // the bytes say JPEG
		"https://img.example/tall.png":  {Data: providertest.PNG(600, 1000)},                    // 0.6: nearest 9:16
		"https://img.example/a.gif":     {Data: gif.Bytes(), ContentType: "image/gif"},
		"https://img.example/b.webp":    {Data: webp, ContentType: "image/webp"},
	}}
	winter := providertest.I2I("make it winter", imagegen.Aspect16x9, "https://img.example/photo.jpg")
	// The answer has the init image's shape (3:2), cropped to 16:9; no
	// aspect_ratio is sent with an init image.
	initImage := func(t *testing.T, f *fake, fields map[string][]string) {
		is := is.New(t)
		is.True(slices.Contains(fetcher.Asked(), winter.ImageInput[0])) // through the guarded fetcher
		c := f.Calls()[0]
		is.Equal(c.fields, fields)
		is.Equal(c.files, []part{{Name: "image", Filename: "image.jpg", ContentType: "image/jpeg", Data: photo}})
	}
	sent := func(t *testing.T, f *fake, contentType, filename string) {
		is := is.New(t)
		c := f.Calls()[0]
		is.Equal(c.files[0].ContentType, contentType)
		is.Equal(c.files[0].Filename, filename)
	}
	return []success{
		{Name: "sd3.5-medium", Config: stability.Config{Model: "sd3.5-medium", Fetcher: fetcher, Strength: 0.35}, Request: winter,
			Plan: imagegen.Plan{Model: "stability/sd3.5-medium", Cost: 2, Seeded: true}, Size: provider.Size{W: 1200, H: 675}, Calls: []string{"sd3"},
			Check: func(t *testing.T, f *fake) {
				initImage(t, f, map[string][]string{"prompt": {"make it winter"}, "model": {"sd3.5-medium"}, "mode": {"image-to-image"}, "strength": {"0.35"}, "output_format": {"png"}})
			}},
		{Name: "ultra", Config: stability.Config{Model: "ultra", Fetcher: fetcher, Strength: 0.35}, Request: winter,
			Size: provider.Size{W: 1200, H: 675}, Calls: []string{"ultra"},
			Check: func(t *testing.T, f *fake) {
				initImage(t, f, map[string][]string{"prompt": {"make it winter"}, "strength": {"0.35"}, "output_format": {"png"}})
			}},
		{Name: "auto follows the reference", Config: stability.Config{Model: "sd3.5-large", Fetcher: fetcher},
			Request: providertest.I2I("x", imagegen.AspectAuto, "https://img.example/tall.png"),
			Size:    provider.Size{W: 558, H: 992}, Calls: []string{"sd3"}, // 9:16, cropped from the 600x1000 answer
			Check: func(t *testing.T, f *fake) {
				is.New(t).Equal(f.Calls()[0].field("strength"), "0.5") // the default strength
			}},
		{Name: "GIF is converted to PNG", Config: stability.Config{Model: "sd3.5-large-turbo", Fetcher: fetcher},
			Request: providertest.I2I("x", imagegen.AspectAuto, "https://img.example/a.gif"),
			Size:    provider.Size{W: 300, H: 200}, Calls: []string{"sd3"}, // 3:2, as the reference
			Check: func(t *testing.T, f *fake) { sent(t, f, "image/png", "image.png") }},
		// WebP is sent as it is; its size is unknown, so auto crops to the
		// ratio nearest the answer's own size (which follows the reference).
		{Name: "WebP is sent as it is", Config: stability.Config{Model: "sd3.5-large-turbo", Fetcher: fetcher},
			Request: providertest.I2I("x", imagegen.AspectAuto, "https://img.example/b.webp"),
			Setup:   func(_ *testing.T, f *fake) { f.answerWith(provider.Size{W: 1216, H: 832}) },
			Size:    provider.Size{W: 1215, H: 810}, Calls: []string{"sd3"}, // 3:2
			Check: func(t *testing.T, f *fake) {
				sent(t, f, "image/webp", "image.webp")
				is.New(t).Equal(f.Calls()[0].files[0].Data, webp)
			}},
	}
}

func unplannable() []providertest.Unplannable[stability.Config] {
	fetcher := &providertest.Fetcher{}
	one := providertest.I2I("x", imagegen.Aspect1x1, "https://img.example/a.png")
	rejected := providertest.Outcome{Message: provider.MsgRejected}
	return []providertest.Unplannable[stability.Config]{
		{Name: "core has no init image", Config: stability.Config{Fetcher: fetcher}, Request: one,
			Field: "scene", Message: "image-to-image is not supported by model core", Unplanned: rejected},
		{Name: "no fetcher", Config: stability.Config{Model: "ultra"}, Request: one,
			Field: "scene", Message: "image-to-image is not available on this server", Unplanned: providertest.Outcome{InvalidInput: true, Message: "reference images are not available on this server"}},
		{Name: "one reference only", Config: stability.Config{Model: "ultra", Fetcher: fetcher},
			Request: providertest.I2I("x", imagegen.Aspect1x1, "https://img.example/a.png", "https://img.example/b.png"),
			Field:   "image_input", Message: "model stability/ultra takes one reference image", Unplanned: rejected},
	}
}

// ratios: the API takes neither 4:3 nor 3:4, so the nearest it has is
// sent, and the answer cropped.
func ratios() []providertest.Ratios[*fake, stability.Config] {
	const table = `
		auto  1:1   1024x1024
		1:1   1:1   1024x1024
		3:2   3:2   1215x810   # 1216x832
		2:3   2:3   810x1215   # 832x1216
		16:9  16:9  1344x756   # 1344x768
		9:16  9:16  756x1344   # 768x1344
		4:3   5:4   1088x816   # 1088x896, cropped
		3:4   4:5   816x1088   # 896x1088, cropped
	`
	sent := func(_ *testing.T, f *fake) string { return f.Calls()[len(f.Calls())-1].field("aspect_ratio") }
	var out []providertest.Ratios[*fake, stability.Config]
	for _, model := range []string{"core", "ultra", "sd3.5-large"} {
		out = append(out, providertest.Ratios[*fake, stability.Config]{Name: model, Config: stability.Config{Model: model}, Sent: sent, Table: table})
	}
	return out
}

// failures maps every documented error, and answers without an image.
func failures(t *testing.T) []failure {
	noRetry := stability.Config{Config: provider.Config{MaxRetries: -1}}
	rejected := providertest.Outcome{Message: provider.MsgRejected}
	misconfigured := providertest.Outcome{Misconfigured: true, Message: provider.MsgMisconfigured}
	badAnswer := providertest.Outcome{Retryable: true, Message: provider.MsgBadAnswer}
	refs := &providertest.Fetcher{Images: map[string]providertest.Image{
		"https://img.example/tiny.png":  {Data: providertest.PNG(40, 200)},
		"https://img.example/notes.txt": {Data: []byte("hello"), ContentType: "text/plain"},
		"https://10.0.0.1/a.png":        {Err: errors.New("address not allowed")},
	}}
	once := []string{"core"}
	internal := providertest.Spec(t, "error.500.internal_error.json")
	return []failure{
		{Name: "400 bad_request", Config: noRetry, Answers: []answer{{Status: 400, Body: providertest.Spec(t, "error.400.bad_request.json")}}, Want: rejected,
			Causes: []string{"HTTP 400 (bad_request id=a1b2c3d4e5f6a1b2c3d4e5f6a1b2c3d4): prompt: is required"}, Calls: once},
		{Name: "400 about the image", Config: noRetry, Answers: []answer{{Status: 400, Body: []byte(`{"id":"e1","name":"bad_request","errors":["image: must be at least 64 pixels on each side"]}`)}},
			Want: providertest.Outcome{InvalidInput: true, Message: "the reference image could not be used by the image provider"}, Causes: []string{"image: must be"}, Calls: once},
		{Name: "402 payment_required", Config: noRetry, Answers: []answer{{Status: 402, Body: []byte(`{"id":"e2","name":"payment_required","errors":["You lack sufficient credits to make this request."]}`)}},
			Want: misconfigured, Causes: []string{"payment_required"}, Calls: once},
		{Name: "403 other", Config: noRetry, Answers: []answer{{Status: 403, Body: []byte(`{"id":"e3","name":"forbidden","errors":["access denied"]}`)}}, Want: misconfigured, Causes: []string{"HTTP 403"}, Calls: once},
		{Name: "404 generation_not_found", Config: noRetry, Answers: []answer{{Status: 404, Body: providertest.Spec(t, "error.404.generation_not_found.json")}},
			Want: misconfigured, Causes: []string{"generation_not_found"}, Calls: once},
		{Name: "413 payload too large", Config: noRetry, Answers: []answer{{Status: 413, Body: []byte(`<html><body>413 Request Entity Too Large</body></html>`)}},
			Want: providertest.Outcome{InvalidInput: true, Message: "the reference image is too large for the image provider"}, Causes: []string{"HTTP 413"}, Calls: once},
		{Name: "422 invalid_language", Config: noRetry, Answers: []answer{{Status: 422, Body: []byte(`{"id":"e4","name":"invalid_language","errors":["English is the only supported language for this service."]}`)}},
			Want: providertest.Outcome{Message: "the image provider accepts prompts in English only"}, Causes: []string{"invalid_language"}, Calls: once},
		{Name: "422 other", Config: noRetry, Answers: []answer{{Status: 422, Body: []byte(`{"id":"e5","name":"unprocessable","errors":["prompt: rejected"]}`)}}, Want: rejected, Causes: []string{"HTTP 422"}, Calls: once},
		{Name: "429 rate_limit_exceeded", Config: noRetry, Answers: []answer{{Status: 429, Body: providertest.Spec(t, "error.429.rate_limit_exceeded.json")}},
			Want: providertest.Outcome{Retryable: true, Message: provider.MsgBusy}, Causes: []string{"HTTP 429 (rate_limit_exceeded): You have exceeded"}, Calls: once},
		{Name: "500 internal_error", Config: noRetry, Answers: []answer{{Status: 500, Body: internal}},
			Want: providertest.Outcome{Retryable: true, Message: provider.MsgUnavailable}, Causes: []string{"internal_error"}, Calls: once},
		{Name: "legacy v1 body", Config: noRetry, Answers: []answer{{Status: 400, Body: []byte(`{"id":"e6","name":"invalid_prompts","message":"prompt is empty"}`)}},
			Want: rejected, Causes: []string{"invalid_prompts id=e6): prompt is empty"}, Calls: once},
		{Name: "an error not JSON", Config: noRetry, Answers: []answer{{Status: 502, Body: []byte(`<html>Bad gateway</html>`)}},
			Want: providertest.Outcome{Retryable: true, Message: provider.MsgUnavailable}, Causes: []string{"Bad gateway"}, Calls: once},
		{Name: "server errors run out", Config: stability.Config{Config: provider.Config{MaxRetries: 2}},
			Answers: []answer{{Status: 500, Body: internal}, {Status: 500, Body: internal}, {Status: 500, Body: internal}},
			Want:    providertest.Outcome{Retryable: true, Message: provider.MsgUnavailable}, Causes: []string{"internal_error"},
			Calls: []string{"core", "core", "core"}, Waits: []providertest.Wait{providertest.Backoff(0), providertest.Backoff(1)}},
		{Name: "a rate limit past the deadline", Deadline: 30 * time.Second, Answers: []answer{{Status: 429, Body: providertest.Spec(t, "error.429.rate_limit_exceeded.json")}},
			Want: providertest.Outcome{Retryable: true, Message: provider.MsgBusy}, Calls: once}, // less time left than the 60 s penalty
		{Name: "an answer that echoes the key", Answers: []answer{{Status: 400, Body: []byte(`{"id":"e7","name":"bad_request","errors":["authorization: ` + key + ` is not allowed here"]}`)}},
			Want: rejected, Causes: []string{provider.Redacted}, Calls: once},
		// Answers without an image.
		{Name: "no image", Config: noRetry, Answers: []answer{{Status: 200, Body: []byte(`{"finish_reason":"SUCCESS","seed":1}`)}}, Want: badAnswer, Calls: once},
		{Name: "unknown finish reason", Config: noRetry, Answers: []answer{{Status: 200, Body: []byte(`{"image":"iVBORw0KGgo=","finish_reason":"ERROR","seed":1}`)}}, Want: badAnswer, Calls: once},
		{Name: "not base64", Config: noRetry, Answers: []answer{{Status: 200, Body: []byte(`{"image":"***","finish_reason":"SUCCESS","seed":1}`)}}, Want: badAnswer, Calls: once},
		{Name: "not an image", Config: noRetry, Answers: []answer{{Status: 200, Body: []byte(`{"image":"aGVsbG8=","finish_reason":"SUCCESS","seed":1}`)}}, Want: badAnswer, Calls: once},
		{Name: "an answer not JSON", Config: noRetry, Answers: []answer{{Status: 200, Body: []byte(`<html>ok</html>`)}}, Want: badAnswer, Calls: once},
		// References that cannot be sent: the provider is not called.
		{Name: "a reference that cannot be fetched", Config: stability.Config{Model: "ultra", Fetcher: refs},
			Request: providertest.I2I("x", imagegen.Aspect1x1, "https://10.0.0.1/a.png"),
			Want:    providertest.Outcome{InvalidInput: true, Message: "image_input[0] could not be downloaded"}},
		{Name: "a reference that is not an image", Config: stability.Config{Model: "ultra", Fetcher: refs},
			Request: providertest.I2I("x", imagegen.Aspect1x1, "https://img.example/notes.txt"),
			Want:    providertest.Outcome{InvalidInput: true, Message: "image_input[0] is not a supported image"}},
		{Name: "a reference too small", Config: stability.Config{Model: "ultra", Fetcher: refs},
			Request: providertest.I2I("x", imagegen.Aspect1x1, "https://img.example/tiny.png"),
			Want:    providertest.Outcome{InvalidInput: true, Message: "image_input[0] is too small for this provider (40x200; every side must be at least 64 pixels)"}},
	}
}

// newModel returns an adapter pointed at f, with a recording clock.
func newModel(t *testing.T, f *fake, c stability.Config) (*stability.Model, *providertest.InstantClock) {
	t.Helper()
	clock := providertest.Configure(&c.Config, f.Server.URL, key)
	return providertest.MustNew(t, stability.New, c), clock
}

// The seed the answer reports comes back with the image, for the
// service to record: the one sent, or the one Stability drew when the
// task's seed was 0, which it reads as "random" (a user may ask for 0:
// the task must then show the seed that makes the image again), or none
// when the answer names none.
func TestSeedFromAnswer(t *testing.T) {
	f := newFake(t)
	m, _ := newModel(t, f, stability.Config{})
	noSeed := providertest.EditJSON(t, providertest.Spec(t, "generate.response.accept-json.json"), func(resp map[string]any) {
		resp["image"] = base64.StdEncoding.EncodeToString(providertest.PNG(1024, 1024))
		delete(resp, "seed")
	})
	for _, c := range []struct {
		name   string
		seed   int64
		answer []byte // scripted, when set
		want   *int64
	}{
		{name: "the seed sent", seed: imagegen.MaxSeed, want: ptr(int64(imagegen.MaxSeed))},
		{name: "0, read as random", seed: 0, want: ptr(int64(343940597))}, // the example's
		{name: "none in the answer", seed: 0, answer: noSeed, want: nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			if c.answer != nil {
				f.Queue("", providertest.Answer{Status: 200, Body: c.answer})
			}
			req := providertest.T2I("a fox", imagegen.Aspect1x1)
			req.Seed = &c.seed
			imgs, err := providertest.Generate(t.Context(), m, req)
			is.NoErr(err)
			is.Equal(imgs[0].Seed, c.want)
		})
	}
}

func ptr[T any](v T) *T { return &v }
