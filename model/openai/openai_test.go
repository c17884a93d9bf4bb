package openai_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/openai"
	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

var ctx = context.Background()

// newModel returns an adapter pointed at f, with a recording clock.
func newModel(t *testing.T, f *fake, c openai.Config) (*openai.Model, *providertest.Clock) {
	t.Helper()
	clock := providertest.Configure(&c.Config, f.baseURL(), key)
	return providertest.MustNew(t, openai.New, c), clock
}

func TestTextToImage(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	m, clock := newModel(t, f, openai.Config{Organization: "org-1", Project: "proj-1"})

	plan, err := m.Plan(providertest.T2I("a cute baby sea otter", imagegen.Aspect1x1))
	is.NoErr(err)
	is.Equal(plan, imagegen.Plan{Model: "openai/gpt-image-1", Cost: 2})

	imgs, err := providertest.Generate(ctx, m, providertest.T2I("a cute baby sea otter", imagegen.Aspect1x1))
	is.NoErr(err)
	is.Equal(len(imgs), 1)
	is.Equal(imgs[0].ContentType, "image/png")
	is.Equal(providertest.SizeOf(t, imgs[0]), provider.Size{W: 1024, H: 1024})

	calls := f.Calls()
	is.Equal(len(calls), 1)
	c := calls[0]
	is.Equal(c.path, "/v1/images/generations")
	is.Equal(c.header.Get("Authorization"), "Bearer "+key)
	is.Equal(c.header.Get("Content-Type"), "application/json")
	is.Equal(c.header.Get("OpenAI-Organization"), "org-1")
	is.Equal(c.header.Get("OpenAI-Project"), "proj-1")
	is.Equal(c.json, map[string]any{"model": "gpt-image-1", "prompt": "a cute baby sea otter", "n": 1.0, "size": "1024x1024", "output_format": "png"})
	is.Equal(len(clock.Waits()), 0)
}

func TestTextToImageDallE3(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	m, _ := newModel(t, f, openai.Config{Model: "dall-e-3", Quality: "hd", Config: provider.Config{Cost: 3}})
	plan, err := m.Plan(providertest.T2I("a lighthouse", imagegen.Aspect16x9))
	is.NoErr(err)
	is.Equal(plan, imagegen.Plan{Model: "openai/dall-e-3", Cost: 3})
	imgs, err := providertest.Generate(ctx, m, providertest.T2I("a lighthouse", imagegen.Aspect16x9))
	is.NoErr(err)
	is.Equal(providertest.SizeOf(t, imgs[0]), provider.Size{W: 1792, H: 1008})
	is.Equal(f.Calls()[0].json, map[string]any{"model": "dall-e-3", "prompt": "a lighthouse", "n": 1.0, "size": "1792x1024", "quality": "hd", "response_format": "b64_json"})
}

func TestURLAnswersAreDownloadedThroughTheFetcher(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	f.answerURL = true
	// The URL of examples/generations.response.dall-e-3.json.
	const exampleURL = "https://oaidalleapiprodscus.blob.core.windows.net/private/org-xxxx/user-xxxx/img-xxxx.png?st=2024-04-23T00%3A53%3A48Z&se=2024-04-23T02%3A53%3A48Z&sig=xxxx"
	fetcher := &providertest.Fetcher{Images: map[string]providertest.Image{exampleURL: {Data: providertest.PNG(1024, 1024), ContentType: "image/png"}}}
	m, _ := newModel(t, f, openai.Config{Model: "dall-e-3", Fetcher: fetcher})
	imgs, err := providertest.Generate(ctx, m, providertest.T2I("a cute baby sea otter", imagegen.Aspect1x1))
	is.NoErr(err)
	is.Equal(fetcher.Asked(), []string{exampleURL})
	is.Equal(providertest.SizeOf(t, imgs[0]), provider.Size{W: 1024, H: 1024})

	// A URL that cannot be downloaded is a retryable failure.
	fetcher.Images = nil
	_, err = providertest.Generate(ctx, m, providertest.T2I("a cute baby sea otter", imagegen.Aspect1x1))
	me := providertest.ModelError(t, err)
	is.True(me.Retryable && !me.Refused)
	is.Equal(me.Message, provider.MsgUnavailable)
}

func TestImageToImage(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	wide, jpg := providertest.PNG(1920, 1080), providertest.JPEG(600, 800)
	fetcher := &providertest.Fetcher{Images: map[string]providertest.Image{
		"https://img.example/wide.png":  {Data: wide, ContentType: "image/png"},
		"https://img.example/photo.jpg": {Data: jpg, ContentType: "image/jpeg"},
	}}
	m, _ := newModel(t, f, openai.Config{Fetcher: fetcher, Quality: "high"})
	req := providertest.I2I("put them in a gift basket", imagegen.AspectAuto, "https://img.example/wide.png", "https://img.example/photo.jpg")
	imgs, err := providertest.Generate(ctx, m, req)
	is.NoErr(err)
	is.Equal(fetcher.Asked(), req.ImageInput)
	// auto: the first reference is 16:9, sent as 1536x1024, cropped.
	is.Equal(providertest.SizeOf(t, imgs[0]), provider.Size{W: 1536, H: 864})

	c := f.Calls()[0]
	is.Equal(c.path, "/v1/images/edits")
	is.Equal(c.header.Get("Authorization"), "Bearer "+key)
	is.Equal(c.fields, map[string][]string{
		"model": {"gpt-image-1"}, "prompt": {"put them in a gift basket"}, "n": {"1"},
		"size": {"1536x1024"}, "quality": {"high"}, "output_format": {"png"},
	})
	is.Equal(len(c.files), 2)
	is.Equal(c.files[0].Name, "image[]")
	is.Equal(c.files[0].ContentType, "image/png")
	is.Equal(c.files[0].Filename, "image-0.png")
	is.Equal(c.files[0].Data, wide)
	is.Equal(c.files[1].Name, "image[]")
	is.Equal(c.files[1].ContentType, "image/jpeg")
	is.Equal(c.files[1].Filename, "image-1.jpg")
	is.Equal(c.files[1].Data, jpg)
}

func TestImageToImageReferenceFailures(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	fetcher := &providertest.Fetcher{Err: errors.New("address not allowed")}
	m, _ := newModel(t, f, openai.Config{Fetcher: fetcher})
	_, err := providertest.Generate(ctx, m, providertest.I2I("x", imagegen.Aspect1x1, "https://10.0.0.1/a.png"))
	me := providertest.ModelError(t, err)
	is.True(me.InvalidInput && !me.Retryable)
	is.Equal(me.Message, "image_input[0] could not be downloaded")
	is.Equal(len(f.Calls()), 0) // the provider was not called

	// The provider's own complaint about a reference is invalid input too.
	fetcher = &providertest.Fetcher{Images: map[string]providertest.Image{"https://img.example/a.png": {Data: providertest.PNG(10, 10)}}}
	f = newFake(t, answer{Status: 400, Body: []byte(`{"error":{"message":"Invalid image file or mode for image 1, please check your image file.","type":"invalid_request_error","param":"image","code":"invalid_image_file"}}`)})
	m, _ = newModel(t, f, openai.Config{Fetcher: fetcher})
	_, err = providertest.Generate(ctx, m, providertest.I2I("x", imagegen.Aspect1x1, "https://img.example/a.png"))
	me = providertest.ModelError(t, err)
	is.True(me.InvalidInput && !me.Retryable)
}

func TestEveryAspectRatio(t *testing.T) {
	type want struct{ sent, result provider.Size }
	s := func(w, h int) provider.Size { return provider.Size{W: w, H: h} }
	tables := map[string]map[imagegen.AspectRatio]want{
		"gpt-image-1": {
			imagegen.AspectAuto: {s(1024, 1024), s(1024, 1024)},
			imagegen.Aspect1x1:  {s(1024, 1024), s(1024, 1024)},
			imagegen.Aspect3x2:  {s(1536, 1024), s(1536, 1024)},
			imagegen.Aspect2x3:  {s(1024, 1536), s(1024, 1536)},
			imagegen.Aspect16x9: {s(1536, 1024), s(1536, 864)},
			imagegen.Aspect9x16: {s(1024, 1536), s(864, 1536)},
			imagegen.Aspect4x3:  {s(1536, 1024), s(1364, 1023)},
			imagegen.Aspect3x4:  {s(1024, 1536), s(1023, 1364)},
		},
		"dall-e-3": {
			imagegen.AspectAuto: {s(1024, 1024), s(1024, 1024)},
			imagegen.Aspect1x1:  {s(1024, 1024), s(1024, 1024)},
			imagegen.Aspect3x2:  {s(1792, 1024), s(1536, 1024)},
			imagegen.Aspect2x3:  {s(1024, 1792), s(1024, 1536)},
			imagegen.Aspect16x9: {s(1792, 1024), s(1792, 1008)},
			imagegen.Aspect9x16: {s(1024, 1792), s(1008, 1792)},
			imagegen.Aspect4x3:  {s(1792, 1024), s(1364, 1023)},
			imagegen.Aspect3x4:  {s(1024, 1792), s(1023, 1364)},
		},
	}
	for model, table := range tables {
		f := newFake(t)
		m, _ := newModel(t, f, openai.Config{Model: model})
		for ratio, w := range table {
			t.Run(model+" "+string(ratio), func(t *testing.T) {
				t.Parallel()
				is := is.New(t)
				prompt := "a fox, " + model + " " + string(ratio)
				imgs, err := providertest.Generate(ctx, m, providertest.T2I(prompt, ratio))
				is.NoErr(err)
				sent := ""
				for _, c := range f.Calls() {
					if c.json["prompt"] == prompt {
						sent = str(c.json["size"])
					}
				}
				is.Equal(sent, w.sent.String()) // the size sent
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

func TestDallE3RefusesImageToImage(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	m, _ := newModel(t, f, openai.Config{Model: "dall-e-3", Fetcher: &providertest.Fetcher{}})
	req := providertest.I2I("x", imagegen.Aspect1x1, "https://img.example/a.png")
	_, err := m.Plan(req)
	var ve *imagegen.ValidationError
	is.True(errors.As(err, &ve))
	is.Equal(ve.Field, "scene")
	is.Equal(ve.Message, "image-to-image is not supported by model dall-e-3")

	_, err = m.Generate(ctx, imagegen.Generation{Request: req}) // even if not planned
	is.True(!providertest.ModelError(t, err).Retryable)
	is.Equal(len(f.Calls()), 0)
}

func TestImageToImageNeedsAFetcher(t *testing.T) {
	is := is.New(t)
	m, _ := newModel(t, newFake(t), openai.Config{})
	_, err := m.Plan(providertest.I2I("x", imagegen.Aspect1x1, "https://img.example/a.png"))
	var ve *imagegen.ValidationError
	is.True(errors.As(err, &ve))
	is.Equal(ve.Field, "scene")
}

func TestRefusals(t *testing.T) {
	for _, tc := range []struct{ model, example string }{
		{"gpt-image-1", "error.moderation_blocked.gpt-image.json"},
		{"dall-e-3", "error.content_policy_violation.dall-e.json"},
	} {
		t.Run(tc.model, func(t *testing.T) {
			is := is.New(t)
			f := newFake(t, answer{Status: 400, Body: example(t, tc.example)})
			m, clock := newModel(t, f, openai.Config{Model: tc.model})
			_, err := providertest.Generate(ctx, m, providertest.T2I("something not allowed", imagegen.Aspect1x1))
			me := providertest.ModelError(t, err)
			is.True(me.Refused)
			is.True(!me.Retryable)
			is.Equal(me.Provider, "openai")
			is.Equal(me.UserMessage(), "refused by content policy: the prompt or image was rejected by the provider's safety system")
			is.Equal(len(f.Calls()), 1) // not retried
			is.Equal(len(clock.Waits()), 0)
		})
	}
}

func TestRateLimitThenSuccess(t *testing.T) {
	is := is.New(t)
	f := newFake(t, answer{Status: 429, Header: map[string]string{"Retry-After": "12"}, Body: example(t, "error.rate_limit.json")})
	m, clock := newModel(t, f, openai.Config{})
	imgs, err := providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
	is.NoErr(err)
	is.Equal(len(imgs), 1)
	is.Equal(len(f.Calls()), 2)
	is.Equal(clock.Waits(), []time.Duration{12 * time.Second}) // Retry-After, on the injected clock
}

func TestRetryAfterMsWins(t *testing.T) {
	is := is.New(t)
	f := newFake(t, answer{Status: 429, Header: map[string]string{"Retry-After": "12", "retry-after-ms": "1500"}, Body: example(t, "error.rate_limit.json")})
	m, clock := newModel(t, f, openai.Config{})
	_, err := providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
	is.NoErr(err)
	is.Equal(clock.Waits(), []time.Duration{1500 * time.Millisecond})
}

func TestServerErrorThenSuccess(t *testing.T) {
	is := is.New(t)
	body := []byte(`{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`)
	f := newFake(t, answer{Status: 500, Body: body}, answer{Status: 503, Body: body})
	m, clock := newModel(t, f, openai.Config{})
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
	body := []byte(`{"error":{"message":"overloaded","type":"server_error","param":null,"code":null}}`)
	f := newFake(t, answer{Status: 503, Body: body}, answer{Status: 503, Body: body}, answer{Status: 503, Body: body})
	m, _ := newModel(t, f, openai.Config{Config: provider.Config{MaxRetries: 2}})
	_, err := providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
	me := providertest.ModelError(t, err)
	is.True(me.Retryable) // the task queue may try again later
	is.Equal(me.Message, provider.MsgUnavailable)
	is.Equal(len(f.Calls()), 3) // bounded: 1 + MaxRetries
}

func TestShouldRetryHeader(t *testing.T) {
	is := is.New(t)
	body := []byte(`{"error":{"message":"overloaded","type":"server_error","param":null,"code":null}}`)
	f := newFake(t, answer{Status: 503, Header: map[string]string{"X-Should-Retry": "false"}, Body: body})
	m, _ := newModel(t, f, openai.Config{})
	_, err := providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
	is.True(!providertest.ModelError(t, err).Retryable)
	is.Equal(len(f.Calls()), 1)
}

func TestTimeout(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	f.hang = make(chan struct{})
	defer close(f.hang)
	m, _ := newModel(t, f, openai.Config{})
	tctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := m.Generate(tctx, imagegen.Generation{Request: providertest.T2I("a fox", imagegen.Aspect1x1)})
	is.True(time.Since(start) < 5*time.Second) // bounded by the deadline
	me := providertest.ModelError(t, err)
	is.True(me.Retryable)
	is.Equal(me.Message, provider.MsgTimeout)
	is.True(errors.Is(err, context.DeadlineExceeded))
	is.Equal(len(f.Calls()), 1) // no retry once the deadline has passed
}

func TestBadAPIKey(t *testing.T) {
	is := is.New(t)
	const wrong = "sk-proj-WRONGKEY-9876543210zyxwvuts"
	f := newFake(t)
	m, clock := newModel(t, f, openai.Config{Config: provider.Config{APIKey: wrong}})
	_, err := providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
	me := providertest.ModelError(t, err)
	is.True(!me.Retryable && !me.Refused && !me.InvalidInput)
	is.Equal(me.UserMessage(), "the image service is misconfigured") // not the user's fault
	is.True(strings.Contains(me.Err.Error(), "HTTP 401"))            // the cause names the status
	is.True(strings.Contains(me.Err.Error(), "invalid_api_key"))
	is.True(!strings.Contains(err.Error(), wrong)) // the echoed key is scrubbed
	is.Equal(len(f.Calls()), 1)
	is.Equal(len(clock.Waits()), 0)
}

func TestOtherFailures(t *testing.T) {
	for _, tc := range []struct {
		name      string
		status    int
		body      []byte
		retryable bool
		msg       string
		cause     string
	}{
		{"invalid value", 400, example(t, "error.invalid_value.json"), false, provider.MsgRejected, "param=size"},
		{"insufficient quota", 429, []byte(`{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`), false, provider.MsgMisconfigured, "insufficient_quota"},
		{"no access to the model", 403, []byte(`{"error":{"message":"Your organization must be verified to use the model gpt-image-1.","type":"invalid_request_error","param":null,"code":null}}`), false, provider.MsgMisconfigured, "HTTP 403"},
		{"not JSON", 502, []byte(`<html>Bad gateway</html>`), true, provider.MsgUnavailable, "Bad gateway"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			f := newFake(t, answer{Status: tc.status, Body: tc.body})
			m, _ := newModel(t, f, openai.Config{Config: provider.Config{MaxRetries: -1}})
			_, err := providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
			me := providertest.ModelError(t, err)
			is.Equal(me.Retryable, tc.retryable)
			is.True(!me.Refused)
			is.Equal(me.Message, tc.msg)
			is.True(strings.Contains(me.Err.Error(), tc.cause))
		})
	}
}

func TestKeyNeverShows(t *testing.T) {
	is := is.New(t)
	c := openai.Config{Config: provider.Config{APIKey: key}, Fetcher: &providertest.Fetcher{}}
	f := newFake(t, answer{Status: 503, Body: []byte("upstream said " + key)})
	m, _ := newModel(t, f, c)
	providertest.NoSecretInAdapter(t, key, c, m)
	_, err := providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
	is.NoErr(err)
	f = newFake(t, answer{Status: 400, Body: []byte(`{"error":{"message":"bad key ` + key + `","type":"invalid_request_error","param":null,"code":null}}`)})
	m, _ = newModel(t, f, c)
	_, err = providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
	is.True(err != nil)
	providertest.NoSecretAnywhere(t, key, err)
	is.True(!strings.Contains(err.Error(), key))
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
