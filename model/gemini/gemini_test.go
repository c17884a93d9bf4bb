package gemini_test

import (
	"context"
	"encoding/base64"
	"slices"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/gemini"
	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

// The scenarios every adapter must pass, as the Gemini API plays them.
func TestConformance(t *testing.T) {
	once := []string{"generate"}
	providertest.Run(t, providertest.Harness[*fake, gemini.Config, *gemini.Model]{
		Provider: "gemini", Key: key, New: gemini.New, NewFake: newFake, NewModel: newModel,
		Constructions: []providertest.Construction[gemini.Config]{
			{Name: "no key", Err: "gemini: Config.APIKey is required"},
			{Name: "bad model", Config: gemini.Config{Config: provider.Config{APIKey: key}, Model: "../x"}, Err: `gemini: Config.Model "../x" is not a model id`},
			{Name: "bad image size", Config: gemini.Config{Config: provider.Config{APIKey: key}, ImageSize: "2k"}, Err: "gemini: Config.ImageSize must be 1K, 2K or 4K"},
			{Name: "bad cost", Config: gemini.Config{Config: provider.Config{APIKey: key, Cost: 4}}, Err: "gemini: Config.Cost must be 1 to 3"},
			{Name: "gemini-3-pro-image-preview", Config: gemini.Config{Config: provider.Config{APIKey: key}, Model: "gemini-3-pro-image-preview"}, Model: "gemini/gemini-3-pro-image-preview"},
		},

		TextToImage:  textToImage(t),
		ImageToImage: imageToImage(),
		Unplannable: []providertest.Unplannable[gemini.Config]{{Name: "no fetcher", Request: providertest.I2I("x", imagegen.Aspect1x1, "https://img.example/ok.png"),
			Field: "scene", Message: "image-to-image is not available on this server", Unplanned: providertest.Outcome{InvalidInput: true, Message: "reference images are not available on this server"}}},
		AspectRatios: []providertest.Ratios[*fake, gemini.Config]{{
			Sent: func(_ *testing.T, f *fake) string { return f.Calls()[len(f.Calls())-1].aspectRatio() },
			Table: `
				auto  1:1   1024x1024
				1:1   1:1   1024x1024
				3:2   3:2   1248x832
				2:3   2:3   832x1248
				16:9  16:9  1344x756
				9:16  9:16  756x1344
				4:3   4:3   1152x864
				3:4   3:4   864x1152
			`,
		}},
		Refusals: []failure{
			{Name: "prompt blocked", Answers: []answer{{Status: 200, Body: providertest.Spec(t, "response.prompt-blocked.json")}}, Causes: []string{"PROHIBITED_CONTENT"}, Calls: once},
			{Name: "IMAGE_SAFETY", Answers: []answer{{Status: 200, Body: providertest.Spec(t, "response.no-image.finish-reason.json")}}, Causes: []string{"IMAGE_SAFETY"}, Calls: once},
			{Name: "SAFETY", Answers: []answer{{Status: 200, Body: finishing(t, "SAFETY")}}, Causes: []string{"SAFETY"}, Calls: once},
			{Name: "IMAGE_PROHIBITED_CONTENT", Answers: []answer{{Status: 200, Body: finishing(t, "IMAGE_PROHIBITED_CONTENT")}}, Causes: []string{"IMAGE_PROHIBITED_CONTENT"}, Calls: once},
			{Name: "BLOCKLIST", Answers: []answer{{Status: 200, Body: finishing(t, "BLOCKLIST")}}, Causes: []string{"BLOCKLIST"}, Calls: once},
			{Name: "IMAGE_RECITATION", Answers: []answer{{Status: 200, Body: finishing(t, "IMAGE_RECITATION")}}, Causes: []string{"IMAGE_RECITATION"}, Calls: once,
				Want: providertest.Outcome{Message: "the image provider declined because the result would resemble existing protected content"}},
		},
		RateLimited: []success{{Answers: []answer{{Status: 429, Body: providertest.Spec(t, "error.429.resource-exhausted.json")}},
			Calls: []string{"generate", "generate"}, Waits: providertest.Waits(38 * time.Second)}}, // RetryInfo.retryDelay
		ServerErrors: []success{{Answers: []answer{{Status: 503, Body: overloaded}, {Status: 500, Body: []byte(`{"error":{"code":500,"message":"An internal error has occurred.","status":"INTERNAL"}}`)}},
			Calls: []string{"generate", "generate", "generate"}, Waits: []providertest.Wait{providertest.Backoff(0), providertest.Backoff(1)}}},
		Timeouts: []failure{{Answers: []answer{{Hang: true}}, Calls: once}},
		BadKey:   failure{Causes: []string{"HTTP 400", "API_KEY_INVALID"}, Calls: once},
		// The default client sets no timeout on the answer (the
		// generation call lasts as long as the generation): a context
		// without a deadline is bounded by Config.MaxDuration.
		Failures: append(failures(t), failure{
			Name:    "no deadline: bounded by Config.MaxDuration",
			Config:  gemini.Config{Config: provider.Config{MaxDuration: 100 * time.Millisecond}},
			Answers: []answer{{Hang: true}},
			Want:    providertest.Outcome{Retryable: true, Message: provider.MsgTimeout},
			Is:      context.DeadlineExceeded,
			Calls:   []string{"generate"},
		}),
	})
}

var overloaded = []byte(`{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}`)

// success and failure are the conformance scenarios on this package's fake.
type (
	success = providertest.Success[*fake, gemini.Config]
	failure = providertest.Failure[*fake, gemini.Config]
)

func textToImage(t *testing.T) []success {
	const prompt = "A photorealistic nano banana dish in a fancy restaurant"
	plan := imagegen.Plan{Model: "gemini/gemini-2.5-flash-image", Cost: 1}
	thoughts := providertest.EditJSON(t, providertest.Spec(t, "response.image.json"), func(doc map[string]any) {
		set(doc, "candidates.0.content.parts", []any{
			map[string]any{"thought": true, "inlineData": map[string]any{"mimeType": "image/png", "data": base64.StdEncoding.EncodeToString(providertest.PNG(10, 10))}},
			map[string]any{"inlineData": map[string]any{"mimeType": "image/png", "data": base64.StdEncoding.EncodeToString(providertest.PNG(64, 64))}},
		})
	})
	return []success{
		{Name: "the documented request", Request: providertest.T2I(prompt, imagegen.Aspect16x9), Plan: plan,
			Size: provider.Size{W: 1344, H: 756}, Calls: []string{"generate"}, // 1344x768 cropped to exactly 16:9
			Check: func(t *testing.T, f *fake) {
				is := is.New(t)
				c := f.Calls()[0]
				is.Equal(c.path, modelPath)
				is.Equal(c.header.Get("x-goog-api-key"), key)
				is.Equal(c.header.Get("Content-Type"), "application/json")
				is.Equal(c.header.Get("Authorization"), "")
				is.Equal(providertest.JSON(t, c.raw), providertest.JSON(t, providertest.Spec(t, "request.text-to-image.json")))
			}},
		{Name: "an answer of another shape is cropped", Request: providertest.T2I("a fox", imagegen.Aspect9x16), Plan: plan,
			Setup: func(_ *testing.T, f *fake) { f.ignoreRatio = true }, Size: provider.Size{W: 576, H: 1024}, Calls: []string{"generate"}},
		{Name: "thought parts are skipped", Plan: plan, Answers: []answer{{Status: 200, Body: thoughts}},
			Size: provider.Size{W: 64, H: 64}, Calls: []string{"generate"}},
	}
}

func imageToImage() []success {
	cat, sofa := providertest.PNG(400, 300), providertest.JPEG(640, 480)
	pair := &providertest.Fetcher{Images: map[string]providertest.Image{
		"https://img.example/cat.png":  {Data: cat, ContentType: "image/png"},
		"https://img.example/sofa.jpg": {Data: sofa, ContentType: "application/octet-stream"}, // the bytes say JPEG
	}}
	const prompt = "Put the cat from the first image onto the sofa in the second image"
	edit := providertest.I2I(prompt, imagegen.Aspect4x3, "https://img.example/cat.png", "https://img.example/sofa.jpg")
	// auto follows the first reference.
	wideAndTall := &providertest.Fetcher{Images: map[string]providertest.Image{
		"https://img.example/wide.png": {Data: providertest.PNG(1920, 1080)},
		"https://img.example/tall.png": {Data: providertest.PNG(300, 900)},
	}}
	auto := providertest.I2I("in watercolour", imagegen.AspectAuto, "https://img.example/wide.png", "https://img.example/tall.png")
	heic := &providertest.Fetcher{Images: map[string]providertest.Image{"https://img.example/a.heic": {Data: []byte("\x00\x00\x00\x18ftypheic...."), ContentType: "image/heic"}}}
	ignoreRatio := func(_ *testing.T, f *fake) { f.ignoreRatio = true }
	return []success{
		{Name: "the documented edit", Config: gemini.Config{Fetcher: pair, ImageSize: "2K"}, Request: edit,
			Size: provider.Size{W: 1152, H: 864}, Calls: []string{"generate"}, // 1184x864 cropped to exactly 4:3
			Check: func(t *testing.T, f *fake) {
				is := is.New(t)
				is.Equal(pair.Asked(), slices.Sorted(slices.Values(edit.ImageInput)))
				// The body is the documented edit request, with our images
				// (and TEXT next to IMAGE among the modalities).
				want := providertest.JSON(t, providertest.Spec(t, "request.edit-with-reference-images.json"))
				set(want, "contents.0.parts.1.inlineData.data", base64.StdEncoding.EncodeToString(cat))
				set(want, "contents.0.parts.2.inlineData.data", base64.StdEncoding.EncodeToString(sofa))
				set(want, "contents.0.parts.2.inlineData.mimeType", "image/jpeg")
				set(want, "generationConfig.responseModalities", []any{"TEXT", "IMAGE"})
				is.Equal(providertest.JSON(t, f.Calls()[0].raw), want)
			}},
		{Name: "auto sends no aspectRatio", Config: gemini.Config{Fetcher: wideAndTall}, Request: auto,
			Size: provider.Size{W: 1344, H: 756}, Calls: []string{"generate"}, // the model followed it; cropped to 16:9
			Check: func(t *testing.T, f *fake) {
				is := is.New(t)
				c := f.Calls()[0]
				is.Equal(c.aspectRatio(), "")
				is.True(c.req.GenerationConfig.ImageConfig == nil) // nothing to configure
			}},
		{Name: "auto: an answer of another shape is cropped to the first reference's", Config: gemini.Config{Fetcher: wideAndTall}, Request: auto,
			Setup: ignoreRatio, Size: provider.Size{W: 1024, H: 576}, Calls: []string{"generate"}},
		{Name: "auto: a reference of unknown size keeps the answer's own (allowed) ratio", Config: gemini.Config{Fetcher: heic},
			Request: providertest.I2I("x", imagegen.AspectAuto, "https://img.example/a.heic"),
			Setup:   ignoreRatio, Size: provider.Size{W: 1024, H: 1024}, Calls: []string{"generate"},
			Check: func(t *testing.T, f *fake) {
				is.New(t).Equal(f.Calls()[0].req.Contents[0].Parts[1].InlineData.MimeType, "image/heic")
			}},
	}
}

// finishing is testdata/response.no-image.finish-reason.json with
// another finish reason.
func finishing(t *testing.T, reason string) []byte {
	return providertest.EditJSON(t, providertest.Spec(t, "response.no-image.finish-reason.json"), func(doc map[string]any) {
		set(doc, "candidates.0.finishReason", reason)
	})
}

// failures are the other documented failures.
func failures(t *testing.T) []failure {
	noRetry := gemini.Config{Config: provider.Config{MaxRetries: -1}}
	once := []string{"generate"}
	noImage := providertest.Outcome{Message: "the image model did not produce an image for this prompt; try rephrasing it"}
	retryLater := providertest.Outcome{Retryable: true, Message: "the image model did not return an image, please retry later"}
	badAnswer := providertest.Outcome{Retryable: true, Message: provider.MsgBadAnswer}
	misconfigured := providertest.Outcome{Misconfigured: true, Message: provider.MsgMisconfigured}
	textOnly := providertest.EditJSON(t, providertest.Spec(t, "response.image.json"), func(doc map[string]any) {
		set(doc, "candidates.0.content.parts", []any{map[string]any{"text": "What kind of dish would you like?"}})
	})
	manyImages := providertest.EditJSON(t, providertest.Spec(t, "response.image.json"), func(doc map[string]any) {
		parts := make([]any, provider.MaxAnswerImages+1)
		for i := range parts {
			parts[i] = map[string]any{"inlineData": map[string]any{"mimeType": "image/png", "data": base64.StdEncoding.EncodeToString(providertest.PNG(8, 8))}}
		}
		set(doc, "candidates.0.content.parts", parts)
	})
	big := make([]byte, 8<<20) // two of them are too much to send inline
	copy(big, providertest.PNG(8, 8))
	refs := &providertest.Fetcher{Images: map[string]providertest.Image{
		"https://img.example/ok.png":  {Data: providertest.PNG(8, 8)},
		"https://img.example/page":    {Data: []byte("<!doctype html>"), ContentType: "text/html"},
		"https://img.example/big.png": {Data: big},
	}}
	return []failure{
		// Answers without an image: failed, not refused; a 200 is not
		// retried within the call.
		{Name: "NO_IMAGE", Config: noRetry, Answers: []answer{{Status: 200, Body: finishing(t, "NO_IMAGE")}}, Want: noImage, Calls: once},
		{Name: "text only", Config: noRetry, Answers: []answer{{Status: 200, Body: textOnly}}, Want: noImage, Calls: once},
		{Name: "MAX_TOKENS", Config: noRetry, Answers: []answer{{Status: 200, Body: finishing(t, "MAX_TOKENS")}}, Want: noImage, Calls: once},
		{Name: "IMAGE_OTHER", Config: noRetry, Answers: []answer{{Status: 200, Body: finishing(t, "IMAGE_OTHER")}}, Want: retryLater, Calls: once},
		{Name: "OTHER", Config: noRetry, Answers: []answer{{Status: 200, Body: finishing(t, "OTHER")}}, Want: retryLater, Calls: once},
		{Name: "no candidates", Config: noRetry, Answers: []answer{{Status: 200, Body: []byte(`{"modelVersion":"gemini-2.5-flash-image"}`)}}, Want: badAnswer, Calls: once},
		{Name: "an answer not JSON", Config: noRetry, Answers: []answer{{Status: 200, Body: []byte(`<html>`)}}, Want: badAnswer, Calls: once},
		// Refused as an answer of OpenAI's, fal's or Replicate's is: each
		// picture would be a blob of the task's, stored all at once.
		{Name: "an answer of more pictures than an answer may hold", Config: noRetry, Answers: []answer{{Status: 200, Body: manyImages}},
			Want: providertest.Outcome{Message: provider.MsgBadAnswer}, Causes: []string{"more than the 16"}, Calls: once},
		// Error answers.
		{Name: "invalid argument", Config: noRetry, Answers: []answer{{Status: 400, Body: providertest.Spec(t, "error.400.invalid-argument.json")}},
			Want: providertest.Outcome{Message: provider.MsgRejected}, Causes: []string{"INVALID_ARGUMENT"}, Calls: once},
		{Name: "billing", Config: noRetry, Answers: []answer{{Status: 400, Body: []byte(`{"error":{"code":400,"message":"User location is not supported for the API use.","status":"FAILED_PRECONDITION"}}`)}},
			Want: misconfigured, Causes: []string{"FAILED_PRECONDITION"}, Calls: once},
		{Name: "permission", Config: noRetry, Answers: []answer{{Status: 403, Body: []byte(`{"error":{"code":403,"message":"Method doesn't allow unregistered callers.","status":"PERMISSION_DENIED"}}`)}},
			Want: misconfigured, Causes: []string{"PERMISSION_DENIED"}, Calls: once},
		{Name: "unknown model", Config: noRetry, Answers: []answer{{Status: 404, Body: []byte(`{"error":{"code":404,"message":"models/gemini-9 is not found for API version v1beta.","status":"NOT_FOUND"}}`)}},
			Want: misconfigured, Causes: []string{"NOT_FOUND"}, Calls: once},
		{Name: "an error not JSON", Config: noRetry, Answers: []answer{{Status: 502, Body: []byte("<html>bad gateway</html>")}},
			Want: providertest.Outcome{Retryable: true, Message: provider.MsgUnavailable}, Causes: []string{"bad gateway"}, Calls: once},
		{Name: "server errors run out", Config: gemini.Config{Config: provider.Config{MaxRetries: 1}},
			Answers: []answer{{Status: 503, Body: overloaded}, {Status: 503, Body: overloaded}, {Status: 503, Body: overloaded}},
			Want:    providertest.Outcome{Retryable: true, Message: provider.MsgUnavailable}, Calls: []string{"generate", "generate"}, Waits: []providertest.Wait{providertest.Backoff(0)}},
		{Name: "a rate limit past the deadline", Deadline: 10 * time.Second, Answers: []answer{{Status: 429, Body: providertest.Spec(t, "error.429.resource-exhausted.json")}},
			Want: providertest.Outcome{Retryable: true, Message: provider.MsgBusy}, Causes: []string{"RESOURCE_EXHAUSTED"}, Calls: once}, // no wait of 38 s
		{Name: "an answer that echoes the key", Answers: []answer{{Status: 400, Body: []byte(`{"error":{"code":400,"message":"bad key ` + key + `","status":"INVALID_ARGUMENT"}}`)}},
			Want: providertest.Outcome{Message: provider.MsgRejected}, Causes: []string{provider.Redacted}, Calls: once},
		// References that cannot be sent: the provider is not called.
		{Name: "a reference that is not an image", Config: gemini.Config{Fetcher: refs},
			Request: providertest.I2I("x", imagegen.Aspect1x1, "https://img.example/ok.png", "https://img.example/page"),
			Want:    providertest.Outcome{InvalidInput: true, Message: "image_input[1] is not a supported image"}},
		{Name: "a reference that cannot be fetched", Config: gemini.Config{Fetcher: refs},
			Request: providertest.I2I("x", imagegen.Aspect1x1, "https://img.example/missing.png"),
			Want:    providertest.Outcome{InvalidInput: true, Message: "image_input[0] could not be downloaded"}},
		{Name: "references too large together", Config: gemini.Config{Fetcher: refs},
			Request: providertest.I2I("x", imagegen.Aspect1x1, "https://img.example/big.png", "https://img.example/big.png"),
			Want:    providertest.Outcome{InvalidInput: true, Message: "the reference images are too large together for this provider (at most about 14 MB in all)"}},
	}
}

// newModel returns an adapter pointed at f, with a recording clock.
func newModel(t *testing.T, f *fake, c gemini.Config) (*gemini.Model, *providertest.InstantClock) {
	t.Helper()
	clock := providertest.Configure(&c.Config, f.baseURL(), key)
	return providertest.MustNew(t, gemini.New, c), clock
}
