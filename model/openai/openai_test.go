package openai_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/openai"
	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

// The scenarios every adapter must pass, as the Images API plays them.
func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.Harness[*fake, openai.Config, *openai.Model]{
		Provider: "openai", Key: key, New: openai.New, NewFake: newFake, NewModel: newModel,
		Constructions: []providertest.Construction[openai.Config]{
			{Name: "no key", Err: "openai: Config.APIKey is required"},
			{Name: "unknown model", Config: openai.Config{Config: provider.Config{APIKey: key}, Model: "dall-e-2"}, Err: `openai: Config.Model "dall-e-2" is not supported`},
			{Name: "bad quality", Config: openai.Config{Config: provider.Config{APIKey: key}, Quality: "hd"}, Err: "openai: Config.Quality must be one of low, medium, high, auto for gpt-image-1"},
			{Name: "bad cost", Config: openai.Config{Config: provider.Config{APIKey: key, Cost: 9}}, Err: "openai: Config.Cost must be 1 to 3"},
			{Name: "gpt-image-1-mini", Config: openai.Config{Config: provider.Config{APIKey: key}, Model: "gpt-image-1-mini"}, Model: "openai/gpt-image-1-mini"},
		},

		TextToImage:  textToImage(),
		ImageToImage: []success{imageToImage()},
		Unplannable: []providertest.Unplannable[openai.Config]{
			{Name: "dall-e-3 edits nothing", Config: openai.Config{Model: "dall-e-3", Fetcher: &providertest.Fetcher{}},
				Request: providertest.I2I("x", imagegen.Aspect1x1, "https://img.example/a.png"), Field: "scene", Message: "image-to-image is not supported by model dall-e-3",
				Unplanned: providertest.Outcome{Message: "image-to-image is not supported by this model"}},
			{Name: "no fetcher", Request: providertest.I2I("x", imagegen.Aspect1x1, "https://img.example/a.png"),
				Field: "scene", Message: "image-to-image is not available on this server", Unplanned: providertest.Outcome{InvalidInput: true, Message: "reference images are not available on this server"}},
		},
		AspectRatios: ratios(),
		Refusals: []failure{
			{Name: "gpt-image-1", Answers: []answer{{Status: 400, Body: providertest.Spec(t, "error.moderation_blocked.gpt-image.json")}}, Calls: []string{"generations"}},
			{Name: "dall-e-3", Config: openai.Config{Model: "dall-e-3"}, Answers: []answer{{Status: 400, Body: providertest.Spec(t, "error.content_policy_violation.dall-e.json")}}, Calls: []string{"generations"}},
		},
		RateLimited: []success{
			{Name: "Retry-After", Answers: []answer{{Status: 429, Header: map[string]string{"Retry-After": "12"}, Body: providertest.Spec(t, "error.rate_limit.json")}},
				Calls: []string{"generations", "generations"}, Waits: providertest.Waits(12 * time.Second)},
			{Name: "retry-after-ms wins", Answers: []answer{{Status: 429, Header: map[string]string{"Retry-After": "12", "retry-after-ms": "1500"}, Body: providertest.Spec(t, "error.rate_limit.json")}},
				Calls: []string{"generations", "generations"}, Waits: providertest.Waits(1500 * time.Millisecond)},
		},
		ServerErrors: []success{{Answers: []answer{{Status: 500, Body: serverError}, {Status: 503, Body: serverError}},
			Calls: []string{"generations", "generations", "generations"}, Waits: []providertest.Wait{providertest.Backoff(0), providertest.Backoff(1)}}},
		Timeouts: []failure{{Answers: []answer{{Hang: true}}, Calls: []string{"generations"}}},
		BadKey:   failure{Causes: []string{"HTTP 401", "invalid_api_key"}, Calls: []string{"generations"}},
		// The default client sets no timeout on the answer (the
		// generation call lasts as long as the generation): a context
		// without a deadline is bounded by Config.MaxDuration.
		Failures: append(failures(t), failure{
			Name:    "no deadline: bounded by Config.MaxDuration",
			Config:  openai.Config{Config: provider.Config{MaxDuration: 100 * time.Millisecond}},
			Answers: []answer{{Hang: true}},
			Want:    providertest.Outcome{Retryable: true, Message: provider.MsgTimeout},
			Is:      context.DeadlineExceeded,
			Calls:   []string{"generations"},
		}),
	})
}

var serverError = []byte(`{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`)

// exampleURL is the image URL of testdata/generations.response.dall-e-3.json.
const exampleURL = "https://oaidalleapiprodscus.blob.core.windows.net/private/org-xxxx/user-xxxx/img-xxxx.png?st=2024-04-23T00%3A53%3A48Z&se=2024-04-23T02%3A53%3A48Z&sig=xxxx"

// success and failure are the conformance scenarios on this package's fake.
type (
	success = providertest.Success[*fake, openai.Config]
	failure = providertest.Failure[*fake, openai.Config]
)

func textToImage() []success {
	urlFetcher := &providertest.Fetcher{Images: map[string]providertest.Image{exampleURL: {Data: providertest.PNG(1024, 1024), ContentType: "image/png"}}}
	return []success{
		{Name: "gpt-image-1", Config: openai.Config{Organization: "org-1", Project: "proj-1"}, Request: providertest.T2I("a cute baby sea otter", imagegen.Aspect1x1),
			Plan: imagegen.Plan{Model: "openai/gpt-image-1", Cost: 2}, Size: provider.Size{W: 1024, H: 1024}, Calls: []string{"generations"},
			Check: func(t *testing.T, f *fake) {
				is := is.New(t)
				c := f.Calls()[0]
				is.Equal(c.header.Get("Authorization"), "Bearer "+key)
				is.Equal(c.header.Get("Content-Type"), "application/json")
				is.Equal(c.header.Get("OpenAI-Organization"), "org-1")
				is.Equal(c.header.Get("OpenAI-Project"), "proj-1")
				is.Equal(c.json, map[string]any{"model": "gpt-image-1", "prompt": "a cute baby sea otter", "n": 1.0, "size": "1024x1024", "output_format": "png"})
			}},
		{Name: "dall-e-3", Config: openai.Config{Model: "dall-e-3", Quality: "hd", Config: provider.Config{Cost: 3}}, Request: providertest.T2I("a lighthouse", imagegen.Aspect16x9),
			Plan: imagegen.Plan{Model: "openai/dall-e-3", Cost: 3}, Size: provider.Size{W: 1792, H: 1008}, Calls: []string{"generations"},
			Check: func(t *testing.T, f *fake) {
				is.New(t).Equal(f.Calls()[0].json, map[string]any{"model": "dall-e-3", "prompt": "a lighthouse", "n": 1.0, "size": "1792x1024", "quality": "hd", "response_format": "b64_json"})
			}},
		{Name: "a URL answer is downloaded through the fetcher", Config: openai.Config{Model: "dall-e-3", Fetcher: urlFetcher},
			Setup: func(_ *testing.T, f *fake) { f.answerURL = true },
			Plan:  imagegen.Plan{Model: "openai/dall-e-3", Cost: 2}, Size: provider.Size{W: 1024, H: 1024}, Calls: []string{"generations"},
			Check: func(t *testing.T, _ *fake) { is.New(t).Equal(urlFetcher.Asked(), []string{exampleURL}) }},
	}
}

func imageToImage() success {
	wide, jpg := providertest.PNG(1920, 1080), providertest.JPEG(600, 800)
	fetcher := &providertest.Fetcher{Images: map[string]providertest.Image{
		"https://img.example/wide.png":  {Data: wide, ContentType: "image/png"},
		"https://img.example/photo.jpg": {Data: jpg, ContentType: "image/jpeg"},
	}}
	req := providertest.I2I("put them in a gift basket", imagegen.AspectAuto, "https://img.example/wide.png", "https://img.example/photo.jpg")
	return success{Config: openai.Config{Fetcher: fetcher, Quality: "high"}, Request: req,
		// auto: the first reference is 16:9, sent as 1536x1024, cropped.
		Size: provider.Size{W: 1536, H: 864}, Calls: []string{"edits"},
		Check: func(t *testing.T, f *fake) {
			is := is.New(t)
			is.Equal(fetcher.Asked(), slices.Sorted(slices.Values(req.ImageInput)))
			c := f.Calls()[0]
			is.Equal(c.header.Get("Authorization"), "Bearer "+key)
			is.Equal(c.fields, map[string][]string{
				"model": {"gpt-image-1"}, "prompt": {"put them in a gift basket"}, "n": {"1"},
				"size": {"1536x1024"}, "quality": {"high"}, "output_format": {"png"},
			})
			is.Equal(c.files, []part{
				{Name: "image[]", Filename: "image-0.png", ContentType: "image/png", Data: wide},
				{Name: "image[]", Filename: "image-1.jpg", ContentType: "image/jpeg", Data: jpg},
			})
		}}
}

// ratios are the sizes sent for each ratio, and the images made of the
// answers (cropped where the size is only near the ratio).
func ratios() []providertest.Ratios[*fake, openai.Config] {
	sent := func(_ *testing.T, f *fake) string { return str(f.Calls()[len(f.Calls())-1].json["size"]) }
	return []providertest.Ratios[*fake, openai.Config]{
		{Name: "gpt-image-1", Sent: sent, Table: `
			auto  1024x1024  1024x1024
			1:1   1024x1024  1024x1024
			3:2   1536x1024  1536x1024
			2:3   1024x1536  1024x1536
			16:9  1536x1024  1536x864
			9:16  1024x1536  864x1536
			4:3   1536x1024  1364x1023
			3:4   1024x1536  1023x1364
		`},
		{Name: "dall-e-3", Config: openai.Config{Model: "dall-e-3"}, Sent: sent, Table: `
			auto  1024x1024  1024x1024
			1:1   1024x1024  1024x1024
			3:2   1792x1024  1536x1024
			2:3   1024x1792  1024x1536
			16:9  1792x1024  1792x1008
			9:16  1024x1792  1008x1792
			4:3   1792x1024  1364x1023
			3:4   1024x1792  1023x1364
		`},
	}
}

// failures are the other documented failures.
func failures(t *testing.T) []failure {
	overloaded := []byte(`{"error":{"message":"overloaded","type":"server_error","param":null,"code":null}}`)
	unavailable := providertest.Outcome{Retryable: true, Message: provider.MsgUnavailable}
	onlyRef := &providertest.Fetcher{Images: map[string]providertest.Image{"https://img.example/a.png": {Data: providertest.PNG(10, 10)}}}
	once := []string{"generations"}
	return []failure{
		{Name: "server errors run out", Config: openai.Config{Config: provider.Config{MaxRetries: 2}},
			Answers: []answer{{Status: 503, Body: overloaded}, {Status: 503, Body: overloaded}, {Status: 503, Body: overloaded}},
			Want:    unavailable, Calls: []string{"generations", "generations", "generations"}, Waits: []providertest.Wait{providertest.Backoff(0), providertest.Backoff(1)}},
		{Name: "X-Should-Retry: false", Answers: []answer{{Status: 503, Header: map[string]string{"X-Should-Retry": "false"}, Body: overloaded}},
			Want: providertest.Outcome{Message: provider.MsgUnavailable}, Calls: once},
		{Name: "invalid value", Config: openai.Config{Config: provider.Config{MaxRetries: -1}}, Answers: []answer{{Status: 400, Body: providertest.Spec(t, "error.invalid_value.json")}},
			Want: providertest.Outcome{Message: provider.MsgRejected}, Causes: []string{"param=size"}, Calls: once},
		{Name: "insufficient quota", Config: openai.Config{Config: provider.Config{MaxRetries: -1}},
			Answers: []answer{{Status: 429, Body: []byte(`{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`)}},
			Want:    providertest.Outcome{Misconfigured: true, Message: provider.MsgMisconfigured}, Causes: []string{"insufficient_quota"}, Calls: once},
		{Name: "no access to the model", Config: openai.Config{Config: provider.Config{MaxRetries: -1}},
			Answers: []answer{{Status: 403, Body: []byte(`{"error":{"message":"Your organization must be verified to use the model gpt-image-1.","type":"invalid_request_error","param":null,"code":null}}`)}},
			Want:    providertest.Outcome{Misconfigured: true, Message: provider.MsgMisconfigured}, Causes: []string{"HTTP 403"}, Calls: once},
		{Name: "not JSON", Config: openai.Config{Config: provider.Config{MaxRetries: -1}}, Answers: []answer{{Status: 502, Body: []byte(`<html>Bad gateway</html>`)}},
			Want: unavailable, Causes: []string{"Bad gateway"}, Calls: once},
		{Name: "a reference that cannot be fetched", Config: openai.Config{Fetcher: &providertest.Fetcher{Err: errors.New("address not allowed")}},
			Request: providertest.I2I("x", imagegen.Aspect1x1, "https://10.0.0.1/a.png"),
			Want:    providertest.Outcome{InvalidInput: true, Message: "image_input[0] could not be downloaded"}},
		{Name: "the provider's complaint about a reference", Config: openai.Config{Fetcher: onlyRef},
			Request: providertest.I2I("x", imagegen.Aspect1x1, "https://img.example/a.png"),
			Answers: []answer{{Status: 400, Body: []byte(`{"error":{"message":"Invalid image file or mode for image 1, please check your image file.","type":"invalid_request_error","param":"image","code":"invalid_image_file"}}`)}},
			Want:    providertest.Outcome{InvalidInput: true, Message: "a reference image could not be used by the image provider"}, Calls: []string{"edits"}},
		{Name: "a URL answer that cannot be downloaded", Config: openai.Config{Model: "dall-e-3", Fetcher: &providertest.Fetcher{}},
			Setup: func(_ *testing.T, f *fake) { f.answerURL = true }, Want: unavailable, Calls: once},
		{Name: "an answer that echoes the key", Answers: []answer{{Status: 400, Body: []byte(`{"error":{"message":"bad key ` + key + `","type":"invalid_request_error","param":null,"code":null}}`)}},
			Want: providertest.Outcome{Message: provider.MsgRejected}, Causes: []string{provider.Redacted}, Calls: once},
		// Refused before any is downloaded: with none downloadable, each
		// would fail the task as unavailable.
		{Name: "an answer of more pictures than an answer may hold", Config: openai.Config{Fetcher: &providertest.Fetcher{}},
			Answers: []answer{{Status: 200, Body: manyURLs(provider.MaxAnswerImages + 1)}},
			Want:    providertest.Outcome{Message: provider.MsgBadAnswer}, Causes: []string{"more than the 16"}, Calls: once},
	}
}

// newModel returns an adapter pointed at f, with a recording clock.
func newModel(t *testing.T, f *fake, c openai.Config) (*openai.Model, *providertest.InstantClock) {
	t.Helper()
	clock := providertest.Configure(&c.Config, f.baseURL(), key)
	return providertest.MustNew(t, openai.New, c), clock
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
		imgs, err := providertest.Generate(context.Background(), m, providertest.I2I("x", imagegen.AspectAuto, "https://img.example/wide.png"))
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

// manyURLs is a generations answer that lists n pictures by URL.
func manyURLs(n int) []byte {
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprintf(`{"url":"https://img.example/%d.png"}`, i)
	}
	return []byte(`{"created":1713833628,"data":[` + strings.Join(items, ",") + `]}`)
}
