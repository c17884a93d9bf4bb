package replicate_test

import (
	"context"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
	"github.com/imagegen/imagegen/model/replicate"
)

var ctx = context.Background()

const (
	kontextPath = "/v1/models/black-forest-labs/flux-kontext-pro/predictions"
	schnellPath = "/v1/models/black-forest-labs/flux-schnell/predictions"
)

// newModel returns an adapter pointed at f, with a recording clock and,
// unless c has one, f as its Fetcher.
func newModel(t *testing.T, f *fake, c replicate.Config) (*replicate.Model, *providertest.InstantClock) {
	t.Helper()
	clock := providertest.Configure(&c.Config, f.baseURL(), key)
	if c.Fetcher == nil {
		c.Fetcher = f
	}
	return providertest.MustNew(t, replicate.New, c), clock
}

func TestTextToImage(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	m, clock := newModel(t, f, replicate.Config{})
	const prompt = "a red panda in a bamboo forest"

	plan, err := m.Plan(providertest.T2I(prompt, imagegen.Aspect16x9))
	is.NoErr(err)
	is.Equal(plan, imagegen.Plan{Model: "replicate/black-forest-labs/flux-kontext-pro", Cost: 2})

	imgs, err := providertest.Generate(ctx, m, providertest.T2I(prompt, imagegen.Aspect16x9))
	is.NoErr(err)
	is.Equal(len(imgs), 1)
	is.Equal(imgs[0].ContentType, "image/png")
	is.Equal(providertest.SizeOf(t, imgs[0]), provider.Size{W: 1328, H: 747}) // 1392x752 cropped to exactly 16:9

	calls := f.Calls()
	is.Equal(len(calls), 3) // create (starting), read (processing), read (succeeded)
	c := calls[0]
	is.Equal(c.path, kontextPath)
	is.Equal(c.header.Get("Authorization"), "Bearer "+key)
	is.Equal(c.header.Get("Content-Type"), "application/json")
	is.Equal(c.header.Get("Prefer"), "wait=60") // no deadline: the longest wait
	is.Equal(c.header.Get("Cancel-After"), "")  // no deadline: nothing to bound
	// The body is the documented official-model request, without
	// num_outputs (flux-kontext-pro has none) and asking for PNG.
	want := providertest.JSON(t, example(t, "create.request.official-model.json"))
	in := want.(map[string]any)["input"].(map[string]any)
	delete(in, "num_outputs")
	in["output_format"] = "png"
	is.Equal(providertest.JSON(t, c.raw), want)

	id := calls[1].id
	is.Equal(calls[1].path, "/v1/predictions/"+id) // urls.get
	is.Equal(calls[2].path, "/v1/predictions/"+id)
	is.Equal(calls[1].header.Get("Authorization"), "Bearer "+key)
	is.Equal(clock.Waits(), []time.Duration{time.Second, time.Second}) // PollInterval, on the injected clock
	is.Equal(f.Fetched(), []string{"https://replicate.delivery/xezq/" + id + "/out-0.png"})
	is.Equal(len(f.callsOf(opCancel)), 0)
}

func TestAnsweredWithinPreferWait(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	f.script = []string{"succeeded"}
	m, clock := newModel(t, f, replicate.Config{})
	imgs, err := providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
	is.NoErr(err)
	is.Equal(providertest.SizeOf(t, imgs[0]), provider.Size{W: 1024, H: 1024})
	is.Equal(len(f.Calls()), 1) // no polling
	is.Equal(len(clock.Waits()), 0)
}

func TestPollingThroughStartingAndProcessing(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	f.script = []string{"starting", "starting", "processing", "processing", "succeeded"}
	m, clock := newModel(t, f, replicate.Config{PollInterval: 250 * time.Millisecond})
	imgs, err := providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect3x2))
	is.NoErr(err)
	is.Equal(providertest.SizeOf(t, imgs[0]), provider.Size{W: 1248, H: 832})
	is.Equal(len(f.callsOf(opCreate)), 1)
	is.Equal(len(f.callsOf(opGet)), 4)
	is.Equal(clock.Waits(), []time.Duration{250 * time.Millisecond, 250 * time.Millisecond, 250 * time.Millisecond, 250 * time.Millisecond})
}

func TestProxyAnswersWithForeignURLs(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	f.foreignURLs = true // urls on https://api.replicate.com, as through a proxy
	m, _ := newModel(t, f, replicate.Config{})
	_, err := providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
	is.NoErr(err)
	gets := f.callsOf(opGet)
	is.Equal(len(gets), 2) // read through BaseURL: the token went nowhere else
	is.Equal(gets[0].path, "/v1/predictions/"+gets[0].id)
}

func TestImageToImage(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	cat := providertest.PNG(400, 300)
	f.refs.Images = map[string]providertest.Image{"https://img.example/cat.png": {Data: cat, ContentType: "image/png"}}
	m, _ := newModel(t, f, replicate.Config{})
	const prompt = "make it look like a watercolor painting"
	imgs, err := providertest.Generate(ctx, m, providertest.I2I(prompt, imagegen.AspectAuto, "https://img.example/cat.png"))
	is.NoErr(err)
	// auto follows the reference: 4:3, answered 1184x880, cropped.
	is.Equal(providertest.SizeOf(t, imgs[0]), provider.Size{W: 1172, H: 879})

	// The input is the documented one (input_image as a data: URI,
	// aspect_ratio match_input_image, output_format png) with our image.
	c := f.callsOf(opCreate)[0]
	is.Equal(c.path, kontextPath)
	want := providertest.JSON(t, example(t, "create.request.version.json")).(map[string]any)
	in := want["input"].(map[string]any)
	in["prompt"] = prompt
	in["input_image"] = "data:image/png;base64," + base64.StdEncoding.EncodeToString(cat)
	is.Equal(providertest.JSON(t, c.raw), map[string]any{"input": in}) // no version, no webhook

	// A ratio asked for is sent as it is.
	_, err = providertest.Generate(ctx, m, providertest.I2I(prompt, imagegen.Aspect2x3, "https://img.example/cat.png"))
	is.NoErr(err)
	is.Equal(f.callsOf(opCreate)[1].input["aspect_ratio"], "2:3")
}

func TestLargeReferenceIsSentAsItsURL(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	big := append(providertest.JPEG(1920, 1080), make([]byte, replicate.MaxDataURIBytes)...)
	f.refs.Images = map[string]providertest.Image{
		"https://img.example/big.jpg": {Data: big, ContentType: "image/jpeg"},
		"http://img.example/big.jpg":  {Data: big, ContentType: "image/jpeg"},
	}
	m, _ := newModel(t, f, replicate.Config{})
	imgs, err := providertest.Generate(ctx, m, providertest.I2I("x", imagegen.AspectAuto, "https://img.example/big.jpg"))
	is.NoErr(err)
	is.Equal(f.callsOf(opCreate)[0].input["input_image"], "https://img.example/big.jpg")
	is.Equal(providertest.SizeOf(t, imgs[0]), provider.Size{W: 1328, H: 747}) // 16:9
	// Replicate could not fetch an http URL: it goes inline.
	_, err = providertest.Generate(ctx, m, providertest.I2I("x", imagegen.AspectAuto, "http://img.example/big.jpg"))
	is.NoErr(err)
	is.True(strings.HasPrefix(f.callsOf(opCreate)[1].input["input_image"].(string), "data:image/jpeg;base64,"))
}

func TestImageToImageWithAWebPReferenceKeepsTheAnswersRatio(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	webp := []byte("RIFF\x24\x00\x00\x00WEBPVP8 \x18\x00\x00\x00")
	f.refs.Images = map[string]providertest.Image{"https://img.example/a.webp": {Data: webp, ContentType: "image/webp"}}
	m, _ := newModel(t, f, replicate.Config{})
	imgs, err := providertest.Generate(ctx, m, providertest.I2I("x", imagegen.AspectAuto, "https://img.example/a.webp"))
	is.NoErr(err)
	is.True(strings.HasPrefix(f.callsOf(opCreate)[0].input["input_image"].(string), "data:image/webp;base64,"))
	is.Equal(providertest.SizeOf(t, imgs[0]), provider.Size{W: 1024, H: 1024}) // as answered
}

func TestImageToImageLimits(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	m, _ := newModel(t, f, replicate.Config{})
	var ve *imagegen.ValidationError
	_, err := m.Plan(providertest.I2I("x", imagegen.Aspect1x1, "https://img.example/a.png", "https://img.example/b.png"))
	is.True(errors.As(err, &ve))
	is.Equal(ve.Field, "image_input")
	// Generate without Plan refuses it too, as invalid input.
	_, err = m.Generate(ctx, imagegen.Generation{Request: providertest.I2I("x", imagegen.Aspect1x1, "https://img.example/a.png", "https://img.example/b.png")})
	is.True(providertest.ModelError(t, err).InvalidInput)

	schnell, _ := newModel(t, f, replicate.Config{Model: "black-forest-labs/flux-schnell"})
	_, err = schnell.Plan(providertest.I2I("x", imagegen.Aspect1x1, "https://img.example/a.png"))
	is.True(errors.As(err, &ve))
	is.Equal(ve.Field, "scene")

	// A reference that cannot be fetched never reaches Replicate.
	_, err = providertest.Generate(ctx, m, providertest.I2I("x", imagegen.Aspect1x1, "https://img.example/missing.png"))
	me := providertest.ModelError(t, err)
	is.True(me.InvalidInput && !me.Retryable)
	is.Equal(me.Message, "image_input[0] could not be downloaded")
	is.Equal(len(f.Calls()), 0)
}

func TestEveryAspectRatio(t *testing.T) {
	f := newFake(t)
	m, _ := newModel(t, f, replicate.Config{})
	want := map[imagegen.AspectRatio]struct {
		sent   string
		result provider.Size
	}{
		imagegen.AspectAuto: {"1:1", provider.Size{W: 1024, H: 1024}},
		imagegen.Aspect1x1:  {"1:1", provider.Size{W: 1024, H: 1024}},
		imagegen.Aspect3x2:  {"3:2", provider.Size{W: 1248, H: 832}},
		imagegen.Aspect2x3:  {"2:3", provider.Size{W: 832, H: 1248}},
		imagegen.Aspect16x9: {"16:9", provider.Size{W: 1328, H: 747}},
		imagegen.Aspect9x16: {"9:16", provider.Size{W: 747, H: 1328}},
		imagegen.Aspect4x3:  {"4:3", provider.Size{W: 1172, H: 879}},
		imagegen.Aspect3x4:  {"3:4", provider.Size{W: 879, H: 1172}},
	}
	if len(want) != len(imagegen.AspectRatios())+1 {
		t.Fatalf("the table misses a ratio of %v", imagegen.AspectRatios())
	}
	for ratio, w := range want {
		t.Run(string(ratio), func(t *testing.T) {
			t.Parallel()
			is := is.New(t)
			prompt := "a fox " + string(ratio)
			imgs, err := providertest.Generate(ctx, m, providertest.T2I(prompt, ratio))
			is.NoErr(err)
			sent := "?"
			for _, c := range f.callsOf(opCreate) {
				if c.input["prompt"] == prompt {
					sent, _ = c.input["aspect_ratio"].(string)
				}
			}
			is.Equal(sent, w.sent)
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

func TestOutputAsAList(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	f.outputs = 2
	m, _ := newModel(t, f, replicate.Config{Model: "black-forest-labs/flux-schnell", Config: provider.Config{Cost: 1}})
	plan, err := m.Plan(providertest.T2I("a fox", imagegen.Aspect9x16))
	is.NoErr(err)
	is.Equal(plan, imagegen.Plan{Model: "replicate/black-forest-labs/flux-schnell", Cost: 1})
	imgs, err := providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect9x16))
	is.NoErr(err)
	is.Equal(len(imgs), 2) // every URL of the list
	c := f.callsOf(opCreate)[0]
	is.Equal(c.path, schnellPath)
	is.Equal(c.input["aspect_ratio"], "9:16")
	id := f.callsOf(opGet)[0].id
	is.Equal(f.Fetched(), []string{"https://replicate.delivery/xezq/" + id + "/out-0.png", "https://replicate.delivery/xezq/" + id + "/out-1.png"})
	for _, img := range imgs {
		is.True(providertest.SizeOf(t, img).Is(imagegen.Aspect9x16))
	}
}

func TestOutputProblems(t *testing.T) {
	t.Run("another host is not downloaded", func(t *testing.T) {
		is := is.New(t)
		f := newFake(t)
		f.outputHost = "evil.example"
		m, _ := newModel(t, f, replicate.Config{})
		_, err := providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
		me := providertest.ModelError(t, err)
		is.True(!me.Retryable && !me.Refused)
		is.Equal(me.Message, provider.MsgBadAnswer)
		is.True(strings.Contains(me.Err.Error(), `"evil.example"`))
		is.Equal(len(f.Fetched()), 0)
	})
	t.Run("a subdomain of an allowed host is", func(t *testing.T) {
		is := is.New(t)
		f := newFake(t)
		f.outputHost = "pbxt.replicate.delivery"
		m, _ := newModel(t, f, replicate.Config{})
		_, err := providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
		is.NoErr(err)
	})
	t.Run("a failed download is retryable", func(t *testing.T) {
		is := is.New(t)
		f := newFake(t)
		m, _ := newModel(t, f, replicate.Config{Fetcher: &providertest.Fetcher{}})
		_, err := providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
		me := providertest.ModelError(t, err)
		is.True(me.Retryable)
		is.Equal(me.Message, provider.MsgUnavailable)
		is.True(!strings.Contains(err.Error(), "replicate.delivery")) // the signed URL stays out
	})
	t.Run("no output", func(t *testing.T) {
		is := is.New(t)
		f := newFake(t)
		body := providertest.EditJSON(t, example(t, "prediction.succeeded.image.json"), func(removed map[string]any) {
			removed["output"], removed["data_removed"] = nil, true
		})
		f.Queue(opCreate, answer{Status: 201, Body: body})
		m, _ := newModel(t, f, replicate.Config{})
		_, err := providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
		me := providertest.ModelError(t, err)
		is.True(me.Retryable)
		is.Equal(me.Message, provider.MsgBadAnswer)
	})
}

func TestRefusals(t *testing.T) {
	for _, tc := range []struct{ name, errorText string }{
		{"NSFW (the example)", ""},
		{"flagged as sensitive", "The input or output was flagged as sensitive. Please try again with different inputs. (E005)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			f := newFake(t)
			f.script = []string{"starting", "processing", "failed"}
			f.errorText = tc.errorText
			m, _ := newModel(t, f, replicate.Config{})
			_, err := providertest.Generate(ctx, m, providertest.T2I("something not allowed", imagegen.Aspect1x1))
			me := providertest.ModelError(t, err)
			is.True(me.Refused)
			is.True(!me.Retryable && !me.Misconfigured)
			is.Equal(me.Provider, "replicate")
			is.Equal(me.Message, provider.MsgRefused)
			is.Equal(me.UserMessage(), "refused by content policy: the prompt or image was rejected by the provider's safety system")
			is.True(strings.Contains(me.Err.Error(), "failed"))
			is.Equal(len(f.callsOf(opCancel)), 0) // it ended on its own
			is.Equal(len(f.Fetched()), 0)
		})
	}
	t.Run("a 422 that reads as one", func(t *testing.T) {
		is := is.New(t)
		f := newFake(t)
		f.Queue(opCreate, answer{Status: 422, Body: []byte(`{"title":"Input validation failed","detail":"- input: prompt was flagged by the content moderation system\n","status":422}`)})
		m, _ := newModel(t, f, replicate.Config{})
		_, err := providertest.Generate(ctx, m, providertest.T2I("x", imagegen.Aspect1x1))
		me := providertest.ModelError(t, err)
		is.True(me.Refused && !me.Retryable)
	})
}

func TestTerminalFailures(t *testing.T) {
	for _, tc := range []struct {
		name, status, errorText, msg string
	}{
		{"failed", "failed", "CUDA out of memory. Tried to allocate 2.00 GiB", "the image model failed to generate the image, please retry later"},
		{"canceled", "canceled", "", "the image provider cancelled the generation, please retry later"},
		{"aborted", "aborted", "", provider.MsgBusy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			f := newFake(t)
			f.script = []string{"starting", tc.status}
			f.errorText = tc.errorText
			m, _ := newModel(t, f, replicate.Config{})
			_, err := providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
			me := providertest.ModelError(t, err)
			is.True(me.Retryable && !me.Refused && !me.Misconfigured)
			is.Equal(me.Message, tc.msg)
			is.True(strings.Contains(me.Err.Error(), tc.status))
			is.True(strings.Contains(me.Err.Error(), tc.errorText))
			is.Equal(len(f.callsOf(opGet)), 1)
			is.Equal(len(f.callsOf(opCancel)), 0)
		})
	}
}

func TestRateLimitThenSuccess(t *testing.T) {
	t.Run("Retry-After on create", func(t *testing.T) {
		is := is.New(t)
		f := newFake(t)
		f.Queue(opCreate, answer{Status: 429, Header: map[string]string{"Retry-After": "30"}, Body: example(t, "error.429.throttled.json")})
		m, clock := newModel(t, f, replicate.Config{})
		imgs, err := providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
		is.NoErr(err)
		is.Equal(len(imgs), 1)
		is.Equal(len(f.callsOf(opCreate)), 2)
		is.Equal(clock.Waits(), []time.Duration{30 * time.Second, time.Second, time.Second}) // Retry-After, then two polls
	})
	t.Run("the body's delay without Retry-After, on a read", func(t *testing.T) {
		is := is.New(t)
		f := newFake(t)
		f.Queue(opGet, answer{Status: 429, Body: example(t, "error.429.throttled.json")})
		m, clock := newModel(t, f, replicate.Config{})
		_, err := providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
		is.NoErr(err)
		is.Equal(len(f.callsOf(opGet)), 3)
		is.Equal(clock.Waits(), []time.Duration{time.Second, 30 * time.Second, time.Second}) // "resets in ~30s"
	})
	t.Run("past the deadline", func(t *testing.T) {
		is := is.New(t)
		f := newFake(t)
		f.Queue(opCreate, answer{Status: 429, Header: map[string]string{"Retry-After": "30"}, Body: example(t, "error.429.throttled.json")})
		m, clock := newModel(t, f, replicate.Config{})
		dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_, err := providertest.Generate(dctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
		me := providertest.ModelError(t, err)
		is.True(me.Retryable)
		is.Equal(me.Message, provider.MsgBusy)
		is.Equal(len(f.Calls()), 1)
		is.Equal(len(clock.Waits()), 0)
	})
}

func TestServerErrorThenSuccess(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	f.Queue(opCreate,
		answer{Status: 503, Body: []byte(`{"title":"Service Unavailable","detail":"Replicate is temporarily unavailable","status":503}`)},
		answer{Status: 500, Body: []byte("<html>internal error</html>")})
	f.Queue(opGet, answer{Status: 502, Body: []byte("bad gateway")})
	m, clock := newModel(t, f, replicate.Config{})
	imgs, err := providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
	is.NoErr(err)
	is.Equal(len(imgs), 1)
	is.Equal(len(f.callsOf(opCreate)), 3)
	is.Equal(len(f.callsOf(opGet)), 3)
	waits := clock.Waits()
	is.Equal(len(waits), 5)                                              // two backoffs, two polls, one backoff
	is.True(waits[0] >= 500*time.Millisecond && waits[0] <= time.Second) // backoff with jitter
	is.True(waits[1] >= time.Second && waits[1] <= 2*time.Second)
	is.Equal(waits[2], time.Second)
	is.True(waits[3] >= 500*time.Millisecond && waits[3] <= time.Second)
	is.Equal(waits[4], time.Second)
}

func TestServerErrorsRunOut(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	down := answer{Status: 503, Body: []byte(`{"title":"Service Unavailable","detail":"down","status":503}`)}
	f.Queue(opCreate, down, down, down)
	m, _ := newModel(t, f, replicate.Config{Config: provider.Config{MaxRetries: 1}})
	_, err := providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
	me := providertest.ModelError(t, err)
	is.True(me.Retryable)
	is.Equal(me.Message, provider.MsgUnavailable)
	is.Equal(len(f.callsOf(opCreate)), 2)
}

func TestPreferWaitAndCancelAfterFollowTheDeadline(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	f.script = []string{"succeeded"}
	m, _ := newModel(t, f, replicate.Config{})
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err := providertest.Generate(dctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
	is.NoErr(err)
	c := f.callsOf(opCreate)[0]
	n, err := strconv.Atoi(strings.TrimPrefix(c.header.Get("Prefer"), "wait="))
	is.NoErr(err)
	is.True(n >= 23 && n <= 25) // 30 s left, less 5 s of margin
	is.Equal(c.header.Get("Cancel-After"), "30s")

	m, _ = newModel(t, f, replicate.Config{SyncWait: 10 * time.Second})
	_, err = providertest.Generate(dctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
	is.NoErr(err)
	is.Equal(f.callsOf(opCreate)[1].header.Get("Prefer"), "wait=10")

	m, _ = newModel(t, f, replicate.Config{SyncWait: -1})
	_, err = providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
	is.NoErr(err)
	is.Equal(f.callsOf(opCreate)[2].header.Get("Prefer"), "")
}

func TestTimeout(t *testing.T) {
	t.Run("the deadline passes during a read: cancelled", func(t *testing.T) {
		is := is.New(t)
		f := newFake(t)
		f.hangGet = true
		m, _ := newModel(t, f, replicate.Config{PollInterval: time.Millisecond})
		tctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := providertest.Generate(tctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
		is.True(time.Since(start) < 5*time.Second)
		me := providertest.ModelError(t, err)
		is.True(me.Retryable && !me.Refused)
		is.Equal(me.Message, provider.MsgTimeout)
		is.True(errors.Is(err, context.DeadlineExceeded))
		create := f.callsOf(opCreate)[0]
		is.Equal(create.header.Get("Prefer"), "")         // less than a second would be left
		is.Equal(create.header.Get("Cancel-After"), "5s") // the API's minimum
		cancels := f.callsOf(opCancel)
		is.Equal(len(cancels), 1)
		is.Equal(cancels[0].id, f.callsOf(opGet)[0].id) // the prediction we followed
		is.Equal(cancels[0].path, "/v1/predictions/"+cancels[0].id+"/cancel")
		is.Equal(cancels[0].header.Get("Authorization"), "Bearer "+key)
		is.True(strings.Contains(me.Err.Error(), "cancelled"))
	})
	t.Run("the next poll would pass the deadline: cancelled at once", func(t *testing.T) {
		is := is.New(t)
		f := newFake(t)
		m, clock := newModel(t, f, replicate.Config{PollInterval: time.Minute})
		tctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		_, err := providertest.Generate(tctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
		me := providertest.ModelError(t, err)
		is.True(me.Retryable)
		is.Equal(me.Message, provider.MsgTimeout)
		is.True(errors.Is(err, provider.ErrPastDeadline))
		is.Equal(len(f.callsOf(opGet)), 0)
		is.Equal(len(f.callsOf(opCancel)), 1)
		is.Equal(len(clock.Waits()), 0)
	})
	t.Run("the caller gives up: cancelled", func(t *testing.T) {
		is := is.New(t)
		f := newFake(t)
		f.hangGet = true
		m, _ := newModel(t, f, replicate.Config{})
		cctx, cancel := context.WithCancel(ctx)
		go func() {
			<-f.hanging // a read is under way
			cancel()
		}()
		_, err := providertest.Generate(cctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
		me := providertest.ModelError(t, err)
		is.True(me.Retryable)
		is.True(errors.Is(err, context.Canceled))
		is.Equal(len(f.callsOf(opCancel)), 1)
	})
	t.Run("a read that keeps failing: cancelled", func(t *testing.T) {
		is := is.New(t)
		f := newFake(t)
		down := answer{Status: 503, Body: []byte(`{"title":"Service Unavailable","detail":"down","status":503}`)}
		f.Queue(opGet, down, down)
		m, _ := newModel(t, f, replicate.Config{Config: provider.Config{MaxRetries: 1}})
		_, err := providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
		me := providertest.ModelError(t, err)
		is.True(me.Retryable)
		is.Equal(me.Message, provider.MsgUnavailable)
		is.Equal(len(f.callsOf(opCancel)), 1)
	})
}

func TestBadAPIKey(t *testing.T) {
	is := is.New(t)
	const wrong = "r8_WRONGTOKEN9876543210zyxwvutsrqponmlkji"
	f := newFake(t)
	m, clock := newModel(t, f, replicate.Config{Config: provider.Config{APIKey: wrong}})
	_, err := providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
	me := providertest.ModelError(t, err)
	is.True(me.Misconfigured) // the operator's to fix; a fallback chain moves on
	is.True(!me.Retryable && !me.Refused && !me.InvalidInput)
	is.Equal(me.UserMessage(), "the image service is misconfigured")
	is.True(strings.Contains(me.Err.Error(), "HTTP 401"))
	is.True(strings.Contains(me.Err.Error(), "You did not pass a valid authentication token"))
	is.True(!strings.Contains(err.Error(), wrong))
	is.Equal(len(f.Calls()), 1)
	is.Equal(len(clock.Waits()), 0)
}

func TestOtherFailures(t *testing.T) {
	for _, tc := range []struct {
		name         string
		model        string
		status       int
		body         func(t *testing.T) []byte
		misconfig    bool
		invalidInput bool
		msg          string
		cause        string
	}{
		{"unknown model", "acme/no-such-model", 0, nil, true, false, provider.MsgMisconfigured, "Not found"},
		{"billing", "", 402, func(*testing.T) []byte {
			return []byte(`{"title":"Insufficient credit","detail":"You have insufficient credit to run this model.","status":402}`)
		}, true, false, provider.MsgMisconfigured, "insufficient credit"},
		{"validation", "", 422, func(t *testing.T) []byte { return example(t, "error.422.validation.json") }, false, false, provider.MsgRejected, "prompt is required"},
		{"a reference the model cannot use", "", 422, func(*testing.T) []byte {
			return []byte(`{"title":"Input validation failed","detail":"- input_image: cannot identify image file","status":422,"invalid_fields":[{"type":"invalid","field":"input.input_image","description":"cannot identify image file"}]}`)
		}, false, true, "the reference image could not be used by the image provider", "input.input_image"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			f := newFake(t)
			if tc.status != 0 {
				f.Queue(opCreate, answer{Status: tc.status, Body: tc.body(t)})
			}
			m, _ := newModel(t, f, replicate.Config{Model: tc.model})
			_, err := providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
			me := providertest.ModelError(t, err)
			is.True(!me.Retryable && !me.Refused)
			is.Equal(me.Misconfigured, tc.misconfig)
			is.Equal(me.InvalidInput, tc.invalidInput)
			is.Equal(me.Message, tc.msg)
			is.True(strings.Contains(me.Err.Error(), tc.cause))
			is.Equal(len(f.Calls()), 1)
		})
	}
}

func TestKeyNeverShows(t *testing.T) {
	is := is.New(t)
	c := replicate.Config{Config: provider.Config{APIKey: key}}
	f := newFake(t)
	f.Queue(opCreate, answer{Status: 500, Body: []byte(`{"title":"Internal","detail":"saw token ` + key + `","status":500}`)})
	m, _ := newModel(t, f, c)
	providertest.NoSecretInAdapter(t, key, c, m)
	_, err := providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
	is.NoErr(err)
	f.Queue(opCreate, answer{Status: 403, Body: []byte(`{"title":"Forbidden","detail":"token ` + key + ` may not run this model","status":403}`)})
	_, err = providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
	is.True(err != nil)
	providertest.NoSecretAnywhere(t, key, err)
	is.True(!strings.Contains(err.Error(), key))
	is.True(strings.Contains(err.Error(), provider.Redacted))
}

func TestNew(t *testing.T) {
	f := &providertest.Fetcher{}
	for _, tc := range []struct {
		name string
		c    replicate.Config
		want string
	}{
		{"no key", replicate.Config{Fetcher: f}, "replicate: Config.APIKey is required"},
		{"no fetcher", replicate.Config{Config: provider.Config{APIKey: key}}, "replicate: Config.Fetcher is required"},
		{"bad model", replicate.Config{Config: provider.Config{APIKey: key}, Fetcher: f, Model: "flux"}, "replicate: Config.Model must be an official model as owner/name"},
		{"a version", replicate.Config{Config: provider.Config{APIKey: key}, Fetcher: f, Model: "a/b:0123"}, "replicate: Config.Model must be"},
		{"a path", replicate.Config{Config: provider.Config{APIKey: key}, Fetcher: f, Model: "a/../b"}, "replicate: Config.Model must be"},
		{"bad reference input", replicate.Config{Config: provider.Config{APIKey: key}, Fetcher: f, ReferenceInput: "input image"}, "replicate: Config.ReferenceInput must be an input name"},
		{"bad cost", replicate.Config{Config: provider.Config{APIKey: key, Cost: 4}, Fetcher: f}, "replicate: Config.Cost must be 1 to 3"},
		{"bad output host", replicate.Config{Config: provider.Config{APIKey: key}, Fetcher: f, OutputHosts: []string{"https://x"}}, "replicate: Config.OutputHosts must hold host names"},
		{"sync wait", replicate.Config{Config: provider.Config{APIKey: key}, Fetcher: f, SyncWait: 2 * time.Minute}, "replicate: Config.SyncWait must be at most 1m0s"},
		{"poll interval", replicate.Config{Config: provider.Config{APIKey: key}, Fetcher: f, PollInterval: -time.Second}, "replicate: Config.PollInterval must not be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) { providertest.NewFails(t, replicate.New, tc.c, tc.want) })
	}
}

// Every fake checks every request against openapi.json and fails its
// test on a violation; this shows that the check rejects requests that
// break the spec.
func TestTheFakeChecksTheSpec(t *testing.T) {
	f := newFake(t)
	for _, tc := range []struct {
		name, path, body, prefer, cancelAfter string
	}{
		{"version on an official model", kontextPath, `{"version":"x","input":{"prompt":"a"}}`, "", ""},
		{"no input", kontextPath, `{"prompt":"a"}`, "", ""},
		{"Prefer past 60", kontextPath, `{"input":{"prompt":"a"}}`, "wait=61", ""},
		{"Prefer malformed", kontextPath, `{"input":{"prompt":"a"}}`, "wait=0", ""},
		{"Cancel-After under 5 s", kontextPath, `{"input":{"prompt":"a"}}`, "", "4s"},
		{"Cancel-After malformed", kontextPath, `{"input":{"prompt":"a"}}`, "", "5 minutes"},
		{"no such path", "/v1/models/a/predictions", `{"input":{}}`, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptestRequest(f.baseURL()+strings.TrimPrefix(tc.path, "/v1"), tc.body)
			if tc.prefer != "" {
				r.Header.Set("Prefer", tc.prefer)
			}
			if tc.cancelAfter != "" {
				r.Header.Set("Cancel-After", tc.cancelAfter)
			}
			if err := f.spec.check(r, []byte(tc.body)); err == nil {
				t.Errorf("the check let %s through", tc.name)
			}
		})
	}
	ok := httptestRequest(f.baseURL()+"/models/black-forest-labs/flux-kontext-pro/predictions", `{"input":{"prompt":"a"}}`)
	ok.Header.Set("Prefer", "wait=60")
	ok.Header.Set("Cancel-After", "90s")
	if err := f.spec.check(ok, []byte(`{"input":{"prompt":"a"}}`)); err != nil {
		t.Errorf("a good request was refused: %v", err)
	}
}
