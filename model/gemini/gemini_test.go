package gemini_test

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/gemini"
	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

var ctx = context.Background()

// newModel returns an adapter pointed at f, with a recording clock.
func newModel(t *testing.T, f *fake, c gemini.Config) (*gemini.Model, *providertest.InstantClock) {
	t.Helper()
	clock := providertest.Configure(&c.Config, f.baseURL(), key)
	return providertest.MustNew(t, gemini.New, c), clock
}

func TestTextToImage(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	m, clock := newModel(t, f, gemini.Config{})
	const prompt = "A photorealistic nano banana dish in a fancy restaurant"

	plan, err := m.Plan(providertest.T2I(prompt, imagegen.Aspect16x9))
	is.NoErr(err)
	is.Equal(plan, imagegen.Plan{Model: "gemini/gemini-2.5-flash-image", Cost: 1})

	imgs, err := providertest.Generate(ctx, m, providertest.T2I(prompt, imagegen.Aspect16x9))
	is.NoErr(err)
	is.Equal(len(imgs), 1)
	is.Equal(imgs[0].ContentType, "image/png")
	is.Equal(providertest.SizeOf(t, imgs[0]), provider.Size{W: 1344, H: 756}) // 1344x768 cropped to exactly 16:9

	c := f.Calls()[0]
	is.Equal(c.path, modelPath)
	is.Equal(c.header.Get("x-goog-api-key"), key)
	is.Equal(c.header.Get("Content-Type"), "application/json")
	is.Equal(c.header.Get("Authorization"), "")
	// The body is exactly the documented text-to-image request.
	is.Equal(providertest.JSON(t, c.raw), providertest.JSON(t, example(t, "request.text-to-image.json")))
	is.Equal(len(clock.Waits()), 0)
}

func TestImageToImage(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	cat, sofa := providertest.PNG(400, 300), providertest.JPEG(640, 480)
	fetcher := &providertest.Fetcher{Images: map[string]providertest.Image{
		"https://img.example/cat.png":  {Data: cat, ContentType: "image/png"},
		"https://img.example/sofa.jpg": {Data: sofa, ContentType: "application/octet-stream"}, // the bytes say JPEG
	}}
	m, _ := newModel(t, f, gemini.Config{Fetcher: fetcher, ImageSize: "2K"})
	const prompt = "Put the cat from the first image onto the sofa in the second image"
	req := providertest.I2I(prompt, imagegen.Aspect4x3, "https://img.example/cat.png", "https://img.example/sofa.jpg")
	imgs, err := providertest.Generate(ctx, m, req)
	is.NoErr(err)
	is.Equal(fetcher.Asked(), req.ImageInput)
	is.Equal(providertest.SizeOf(t, imgs[0]), provider.Size{W: 1152, H: 864}) // 1184x864 cropped to exactly 4:3

	// The body is the documented edit request, with our images (and
	// TEXT next to IMAGE among the modalities).
	want := providertest.JSON(t, example(t, "request.edit-with-reference-images.json"))
	set(want, "contents.0.parts.1.inlineData.data", base64.StdEncoding.EncodeToString(cat))
	set(want, "contents.0.parts.2.inlineData.data", base64.StdEncoding.EncodeToString(sofa))
	set(want, "contents.0.parts.2.inlineData.mimeType", "image/jpeg")
	set(want, "generationConfig.responseModalities", []any{"TEXT", "IMAGE"})
	is.Equal(providertest.JSON(t, f.Calls()[0].raw), want)
}

func TestAutoImageToImageFollowsTheFirstReference(t *testing.T) {
	wide := providertest.PNG(1920, 1080)
	fetcher := &providertest.Fetcher{Images: map[string]providertest.Image{
		"https://img.example/wide.png": {Data: wide},
		"https://img.example/tall.png": {Data: providertest.PNG(300, 900)},
	}}
	req := providertest.I2I("in watercolour", imagegen.AspectAuto, "https://img.example/wide.png", "https://img.example/tall.png")
	t.Run("no aspectRatio is sent", func(t *testing.T) {
		is := is.New(t)
		f := newFake(t)
		m, _ := newModel(t, f, gemini.Config{Fetcher: fetcher})
		imgs, err := providertest.Generate(ctx, m, req)
		is.NoErr(err)
		c := f.Calls()[0]
		is.Equal(c.aspectRatio(), "")
		is.True(c.req.GenerationConfig.ImageConfig == nil)                        // nothing to configure
		is.Equal(providertest.SizeOf(t, imgs[0]), provider.Size{W: 1344, H: 756}) // the model followed it; cropped to 16:9
	})
	t.Run("an answer of another shape is cropped to it", func(t *testing.T) {
		is := is.New(t)
		f := newFake(t)
		f.ignoreRatio = true
		m, _ := newModel(t, f, gemini.Config{Fetcher: fetcher})
		imgs, err := providertest.Generate(ctx, m, req)
		is.NoErr(err)
		is.Equal(providertest.SizeOf(t, imgs[0]), provider.Size{W: 1024, H: 576})
	})
	t.Run("a reference of unknown size: the answer keeps its own (allowed) ratio", func(t *testing.T) {
		is := is.New(t)
		f := newFake(t)
		f.ignoreRatio = true
		heic := &providertest.Fetcher{Images: map[string]providertest.Image{"https://img.example/a.heic": {Data: []byte("\x00\x00\x00\x18ftypheic...."), ContentType: "image/heic"}}}
		m, _ := newModel(t, f, gemini.Config{Fetcher: heic})
		imgs, err := providertest.Generate(ctx, m, providertest.I2I("x", imagegen.AspectAuto, "https://img.example/a.heic"))
		is.NoErr(err)
		is.Equal(f.Calls()[0].req.Contents[0].Parts[1].InlineData.MimeType, "image/heic")
		is.Equal(providertest.SizeOf(t, imgs[0]), provider.Size{W: 1024, H: 1024})
	})
}

func TestEveryAspectRatio(t *testing.T) {
	f := newFake(t)
	m, _ := newModel(t, f, gemini.Config{})
	want := map[imagegen.AspectRatio]struct {
		sent   string
		result provider.Size
	}{
		imagegen.AspectAuto: {"1:1", provider.Size{W: 1024, H: 1024}},
		imagegen.Aspect1x1:  {"1:1", provider.Size{W: 1024, H: 1024}},
		imagegen.Aspect3x2:  {"3:2", provider.Size{W: 1248, H: 832}},
		imagegen.Aspect2x3:  {"2:3", provider.Size{W: 832, H: 1248}},
		imagegen.Aspect16x9: {"16:9", provider.Size{W: 1344, H: 756}},
		imagegen.Aspect9x16: {"9:16", provider.Size{W: 756, H: 1344}},
		imagegen.Aspect4x3:  {"4:3", provider.Size{W: 1152, H: 864}},
		imagegen.Aspect3x4:  {"3:4", provider.Size{W: 864, H: 1152}},
	}
	for ratio, w := range want {
		t.Run(string(ratio), func(t *testing.T) {
			t.Parallel()
			is := is.New(t)
			prompt := "a fox " + string(ratio)
			imgs, err := providertest.Generate(ctx, m, providertest.T2I(prompt, ratio))
			is.NoErr(err)
			sent := "?"
			for _, c := range f.Calls() {
				if *c.req.Contents[0].Parts[0].Text == prompt {
					sent = c.aspectRatio()
				}
			}
			is.Equal(sent, w.sent) // imageConfig.aspectRatio
			got := providertest.SizeOf(t, imgs[0])
			is.Equal(got, w.result)
			exact := ratio
			if ratio == imagegen.AspectAuto {
				exact = imagegen.Aspect1x1
			}
			is.True(got.Is(exact)) // exactly the ratio
		})
	}
}

func TestAnswerOfAnotherShapeIsCropped(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	f.ignoreRatio = true
	m, _ := newModel(t, f, gemini.Config{})
	imgs, err := providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect9x16))
	is.NoErr(err)
	is.Equal(providertest.SizeOf(t, imgs[0]), provider.Size{W: 576, H: 1024})
}

func TestRefusals(t *testing.T) {
	for _, tc := range []struct {
		name  string
		body  func(t *testing.T) []byte
		cause string
		msg   string
	}{
		{"prompt blocked", func(t *testing.T) []byte { return example(t, "response.prompt-blocked.json") }, "PROHIBITED_CONTENT", provider.MsgRefused},
		{"IMAGE_SAFETY", func(t *testing.T) []byte { return example(t, "response.no-image.finish-reason.json") }, "IMAGE_SAFETY", provider.MsgRefused},
		{"SAFETY", finishing("SAFETY"), "SAFETY", provider.MsgRefused},
		{"IMAGE_PROHIBITED_CONTENT", finishing("IMAGE_PROHIBITED_CONTENT"), "IMAGE_PROHIBITED_CONTENT", provider.MsgRefused},
		{"BLOCKLIST", finishing("BLOCKLIST"), "BLOCKLIST", provider.MsgRefused},
		{"IMAGE_RECITATION", finishing("IMAGE_RECITATION"), "IMAGE_RECITATION", "the image provider declined because the result would resemble existing protected content"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			f := newFake(t, answer{Status: 200, Body: tc.body(t)})
			m, clock := newModel(t, f, gemini.Config{})
			_, err := providertest.Generate(ctx, m, providertest.T2I("something not allowed", imagegen.Aspect1x1))
			me := providertest.ModelError(t, err)
			is.True(me.Refused)
			is.True(!me.Retryable)
			is.Equal(me.Provider, "gemini")
			is.Equal(me.Message, tc.msg)
			is.True(strings.Contains(me.Err.Error(), tc.cause))
			is.Equal(len(f.Calls()), 1)
			is.Equal(len(clock.Waits()), 0)
		})
	}
}

// finishing is examples/response.no-image.finish-reason.json with
// another finish reason.
func finishing(reason string) func(t *testing.T) []byte {
	return func(t *testing.T) []byte {
		return providertest.EditJSON(t, example(t, "response.no-image.finish-reason.json"), func(doc map[string]any) {
			set(doc, "candidates.0.finishReason", reason)
		})
	}
}

// textOnly is examples/response.image.json without its image part.
func textOnly(t *testing.T) []byte {
	return providertest.EditJSON(t, example(t, "response.image.json"), func(doc map[string]any) {
		set(doc, "candidates.0.content.parts", []any{map[string]any{"text": "What kind of dish would you like?"}})
	})
}

func TestAnswersWithoutAnImage(t *testing.T) {
	for _, tc := range []struct {
		name      string
		body      func(t *testing.T) []byte
		retryable bool
		msg       string
	}{
		{"NO_IMAGE", finishing("NO_IMAGE"), false, "the image model did not produce an image for this prompt; try rephrasing it"},
		{"text only", textOnly, false, "the image model did not produce an image for this prompt; try rephrasing it"},
		{"MAX_TOKENS", finishing("MAX_TOKENS"), false, "the image model did not produce an image for this prompt; try rephrasing it"},
		{"IMAGE_OTHER", finishing("IMAGE_OTHER"), true, "the image model did not return an image, please retry later"},
		{"OTHER", finishing("OTHER"), true, "the image model did not return an image, please retry later"},
		{"no candidates", func(*testing.T) []byte { return []byte(`{"modelVersion":"gemini-2.5-flash-image"}`) }, true, provider.MsgBadAnswer},
		{"not JSON", func(*testing.T) []byte { return []byte(`<html>`) }, true, provider.MsgBadAnswer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			f := newFake(t, answer{Status: 200, Body: tc.body(t)})
			m, _ := newModel(t, f, gemini.Config{Config: provider.Config{MaxRetries: -1}})
			_, err := providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
			me := providertest.ModelError(t, err)
			is.True(!me.Refused) // failed, not refused
			is.Equal(me.Retryable, tc.retryable)
			is.Equal(me.Message, tc.msg)
			is.Equal(len(f.Calls()), 1) // a 200 is not retried within the call
		})
	}
}

func TestThoughtPartsAreSkipped(t *testing.T) {
	is := is.New(t)
	body := providertest.EditJSON(t, example(t, "response.image.json"), func(doc map[string]any) {
		set(doc, "candidates.0.content.parts", []any{
			map[string]any{"thought": true, "inlineData": map[string]any{"mimeType": "image/png", "data": base64.StdEncoding.EncodeToString(providertest.PNG(10, 10))}},
			map[string]any{"inlineData": map[string]any{"mimeType": "image/png", "data": base64.StdEncoding.EncodeToString(providertest.PNG(64, 64))}},
		})
	})
	f := newFake(t, answer{Status: 200, Body: body})
	m, _ := newModel(t, f, gemini.Config{})
	imgs, err := providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
	is.NoErr(err)
	is.Equal(len(imgs), 1)
	is.Equal(providertest.SizeOf(t, imgs[0]), provider.Size{W: 64, H: 64})
}

func TestRateLimitThenSuccess(t *testing.T) {
	is := is.New(t)
	f := newFake(t, answer{Status: 429, Body: example(t, "error.429.resource-exhausted.json")})
	m, clock := newModel(t, f, gemini.Config{})
	imgs, err := providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
	is.NoErr(err)
	is.Equal(len(imgs), 1)
	is.Equal(len(f.Calls()), 2)
	is.Equal(clock.Waits(), []time.Duration{38 * time.Second}) // RetryInfo.retryDelay, on the injected clock
}

func TestRateLimitPastTheDeadline(t *testing.T) {
	is := is.New(t)
	f := newFake(t, answer{Status: 429, Body: example(t, "error.429.resource-exhausted.json")})
	m, clock := newModel(t, f, gemini.Config{})
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	start := time.Now()
	_, err := m.Generate(dctx, imagegen.Generation{Request: providertest.T2I("a fox", imagegen.Aspect1x1)})
	is.True(time.Since(start) < 5*time.Second) // did not wait 38 s
	me := providertest.ModelError(t, err)
	is.True(me.Retryable)
	is.Equal(me.Message, provider.MsgBusy)
	is.True(strings.Contains(me.Err.Error(), "RESOURCE_EXHAUSTED"))
	is.Equal(len(f.Calls()), 1)
	is.Equal(len(clock.Waits()), 0)
}

func TestServerErrorThenSuccess(t *testing.T) {
	is := is.New(t)
	overloaded := []byte(`{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}`)
	internal := []byte(`{"error":{"code":500,"message":"An internal error has occurred.","status":"INTERNAL"}}`)
	f := newFake(t, answer{Status: 503, Body: overloaded}, answer{Status: 500, Body: internal})
	m, clock := newModel(t, f, gemini.Config{})
	imgs, err := providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
	is.NoErr(err)
	is.Equal(len(imgs), 1)
	is.Equal(len(f.Calls()), 3)
	waits := clock.Waits()
	is.Equal(len(waits), 2)
	is.True(waits[0] >= 500*time.Millisecond && waits[0] <= time.Second) // backoff with jitter
	is.True(waits[1] >= time.Second && waits[1] <= 2*time.Second)
}

func TestServerErrorsRunOut(t *testing.T) {
	is := is.New(t)
	overloaded := []byte(`{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}`)
	f := newFake(t, answer{Status: 503, Body: overloaded}, answer{Status: 503, Body: overloaded}, answer{Status: 503, Body: overloaded})
	m, _ := newModel(t, f, gemini.Config{Config: provider.Config{MaxRetries: 1}})
	_, err := providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
	me := providertest.ModelError(t, err)
	is.True(me.Retryable)
	is.Equal(me.Message, provider.MsgUnavailable)
	is.Equal(len(f.Calls()), 2)
}

func TestTimeout(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	f.hang = make(chan struct{})
	defer close(f.hang)
	m, _ := newModel(t, f, gemini.Config{})
	tctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := m.Generate(tctx, imagegen.Generation{Request: providertest.T2I("a fox", imagegen.Aspect1x1)})
	is.True(time.Since(start) < 5*time.Second)
	me := providertest.ModelError(t, err)
	is.True(me.Retryable)
	is.Equal(me.Message, provider.MsgTimeout)
	is.True(errors.Is(err, context.DeadlineExceeded))
	is.Equal(len(f.Calls()), 1)
}

func TestBadAPIKey(t *testing.T) {
	is := is.New(t)
	const wrong = "AIzaSyWRONGKEY-9876543210zyxwvutsrqpon"
	f := newFake(t)
	m, clock := newModel(t, f, gemini.Config{Config: provider.Config{APIKey: wrong}})
	_, err := providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
	me := providertest.ModelError(t, err)
	is.True(!me.Retryable && !me.Refused && !me.InvalidInput)
	is.Equal(me.UserMessage(), "the image service is misconfigured")
	is.True(strings.Contains(me.Err.Error(), "HTTP 400"))
	is.True(strings.Contains(me.Err.Error(), "API_KEY_INVALID"))
	is.True(!strings.Contains(err.Error(), wrong)) // the echoed key is redacted
	is.Equal(len(f.Calls()), 1)
	is.Equal(len(clock.Waits()), 0)
}

func TestOtherFailures(t *testing.T) {
	for _, tc := range []struct {
		name      string
		status    int
		body      func(t *testing.T) []byte
		retryable bool
		msg       string
		cause     string
	}{
		{"invalid argument", 400, func(t *testing.T) []byte { return example(t, "error.400.invalid-argument.json") }, false, provider.MsgRejected, "INVALID_ARGUMENT"},
		{"billing", 400, func(*testing.T) []byte {
			return []byte(`{"error":{"code":400,"message":"User location is not supported for the API use.","status":"FAILED_PRECONDITION"}}`)
		}, false, provider.MsgMisconfigured, "FAILED_PRECONDITION"},
		{"permission", 403, func(*testing.T) []byte {
			return []byte(`{"error":{"code":403,"message":"Method doesn't allow unregistered callers.","status":"PERMISSION_DENIED"}}`)
		}, false, provider.MsgMisconfigured, "PERMISSION_DENIED"},
		{"unknown model", 404, func(*testing.T) []byte {
			return []byte(`{"error":{"code":404,"message":"models/gemini-9 is not found for API version v1beta.","status":"NOT_FOUND"}}`)
		}, false, provider.MsgMisconfigured, "NOT_FOUND"},
		{"not JSON", 502, func(*testing.T) []byte { return []byte("<html>bad gateway</html>") }, true, provider.MsgUnavailable, "bad gateway"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			f := newFake(t, answer{Status: tc.status, Body: tc.body(t)})
			m, _ := newModel(t, f, gemini.Config{Config: provider.Config{MaxRetries: -1}})
			_, err := providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
			me := providertest.ModelError(t, err)
			is.Equal(me.Retryable, tc.retryable)
			is.True(!me.Refused)
			is.Equal(me.Message, tc.msg)
			is.True(strings.Contains(me.Err.Error(), tc.cause))
		})
	}
}

func TestReferenceFailures(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	fetcher := &providertest.Fetcher{Images: map[string]providertest.Image{
		"https://img.example/ok.png": {Data: providertest.PNG(8, 8)},
		"https://img.example/page":   {Data: []byte("<!doctype html>"), ContentType: "text/html"},
	}}
	m, _ := newModel(t, f, gemini.Config{Fetcher: fetcher})
	_, err := providertest.Generate(ctx, m, providertest.I2I("x", imagegen.Aspect1x1, "https://img.example/ok.png", "https://img.example/page"))
	me := providertest.ModelError(t, err)
	is.True(me.InvalidInput && !me.Retryable)
	is.Equal(me.Message, "image_input[1] is not a supported image")
	is.Equal(len(f.Calls()), 0)

	_, err = providertest.Generate(ctx, m, providertest.I2I("x", imagegen.Aspect1x1, "https://img.example/missing.png"))
	is.True(providertest.ModelError(t, err).InvalidInput)

	big := make([]byte, 8<<20) // two of them are too much to send inline
	copy(big, providertest.PNG(8, 8))
	fetcher.Images["https://img.example/big.png"] = providertest.Image{Data: big}
	_, err = providertest.Generate(ctx, m, providertest.I2I("x", imagegen.Aspect1x1, "https://img.example/big.png", "https://img.example/big.png"))
	me = providertest.ModelError(t, err)
	is.True(me.InvalidInput && !me.Retryable)
	is.True(strings.Contains(me.Message, "too large together"))
	is.Equal(len(f.Calls()), 0)

	noFetcher, _ := newModel(t, f, gemini.Config{})
	_, err = noFetcher.Plan(providertest.I2I("x", imagegen.Aspect1x1, "https://img.example/ok.png"))
	var ve *imagegen.ValidationError
	is.True(errors.As(err, &ve))
	is.Equal(ve.Field, "scene")
}

func TestKeyNeverShows(t *testing.T) {
	is := is.New(t)
	c := gemini.Config{Config: provider.Config{APIKey: key}}
	f := newFake(t, answer{Status: 500, Body: []byte(`{"error":{"code":500,"message":"saw key ` + key + `","status":"INTERNAL"}}`)})
	m, _ := newModel(t, f, c)
	providertest.NoSecretInAdapter(t, key, c, m)
	_, err := providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
	is.NoErr(err)
	f = newFake(t, answer{Status: 400, Body: []byte(`{"error":{"code":400,"message":"bad key ` + key + `","status":"INVALID_ARGUMENT"}}`)})
	m, _ = newModel(t, f, c)
	_, err = providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
	is.True(err != nil)
	providertest.NoSecretAnywhere(t, key, err)
	is.True(!strings.Contains(err.Error(), key))
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
