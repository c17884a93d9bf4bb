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

var (
	kontext = imagegen.Plan{Model: "replicate/black-forest-labs/flux-kontext-pro", Cost: 2, Seeded: true}
	// polled is a run's record of calls: created starting, then read
	// processing and succeeded (the fake's default script).
	polled = []string{opCreate, opGet, opGet}
)

// The scenarios every adapter must pass, as Replicate's API plays them.
func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.Harness[*fake, replicate.Config, *replicate.Model]{
		Provider: "replicate", Key: key, New: replicate.New, NewFake: newFake, NewModel: newModel,
		Constructions: constructions(),

		TextToImage:  textToImage(t),
		ImageToImage: imageToImage(t),
		Unplannable: []providertest.Unplannable[replicate.Config]{
			{Name: "two references", Request: providertest.I2I("x", imagegen.Aspect1x1, "https://img.example/a.png", "https://img.example/b.png"),
				Field: "image_input", Message: "must hold one URL for model black-forest-labs/flux-kontext-pro (got 2)",
				Unplanned: providertest.Outcome{InvalidInput: true, Message: "image_input: must hold one URL for model black-forest-labs/flux-kontext-pro (got 2)"}},
			{Name: "a model without references", Config: replicate.Config{Model: "black-forest-labs/flux-schnell"},
				Request: providertest.I2I("x", imagegen.Aspect1x1, "https://img.example/a.png"),
				Field:   "scene", Message: "image-to-image is not supported by model black-forest-labs/flux-schnell",
				Unplanned: providertest.Outcome{InvalidInput: true, Message: "scene: image-to-image is not supported by model black-forest-labs/flux-schnell"}},
		},
		AspectRatios: []providertest.Ratios[*fake, replicate.Config]{{
			Sent: func(_ *testing.T, f *fake) string {
				creates := f.callsOf(opCreate)
				sent, _ := creates[len(creates)-1].input["aspect_ratio"].(string)
				return sent
			},
			Table: `
				auto  1:1   1024x1024
				1:1   1:1   1024x1024
				3:2   3:2   1248x832
				2:3   2:3   832x1248
				16:9  16:9  1328x747
				9:16  9:16  747x1328
				4:3   4:3   1172x879
				3:4   3:4   879x1172
			`,
		}},
		Refusals:    refusals(),
		RateLimited: rateLimited(t),
		ServerErrors: []success{{Setup: serverErrors, Calls: []string{opCreate, opCreate, opCreate, opGet, opGet, opGet},
			// two backoffs, a poll, a backoff, a poll
			Waits: []providertest.Wait{providertest.Backoff(0), providertest.Backoff(1), {Min: time.Second, Max: time.Second}, providertest.Backoff(0), {Min: time.Second, Max: time.Second}}}},
		Timeouts: timeouts(),
		BadKey:   failure{Causes: []string{"HTTP 401", "You did not pass a valid authentication token"}, Calls: []string{opCreate}},
		// The caller gives up while the prediction runs: it is cancelled.
		GiveUp:   &failure{Calls: []string{opCreate, opCancel}},
		Failures: failures(t),
		// flux-kontext-pro takes the seed as its "seed" input.
		SentSeed: func(_ *testing.T, f *fake) *int64 {
			creates := f.callsOf(opCreate)
			sent, ok := creates[len(creates)-1].input["seed"].(float64) // a JSON number
			if !ok {
				return nil
			}
			seed := int64(sent)
			return &seed
		},
	})
}

func constructions() []providertest.Construction[replicate.Config] {
	f := &providertest.Fetcher{}
	return []providertest.Construction[replicate.Config]{
		{Name: "no key", Config: replicate.Config{Fetcher: f}, Err: "replicate: Config.APIKey is required"},
		{Name: "no fetcher", Config: replicate.Config{Config: provider.Config{APIKey: key}}, Err: "replicate: Config.Fetcher is required"},
		{Name: "bad model", Config: replicate.Config{Config: provider.Config{APIKey: key}, Fetcher: f, Model: "flux"}, Err: "replicate: Config.Model must be an official model as owner/name"},
		{Name: "a version", Config: replicate.Config{Config: provider.Config{APIKey: key}, Fetcher: f, Model: "a/b:0123"}, Err: "replicate: Config.Model must be"},
		{Name: "a path", Config: replicate.Config{Config: provider.Config{APIKey: key}, Fetcher: f, Model: "a/../b"}, Err: "replicate: Config.Model must be"},
		{Name: "bad reference input", Config: replicate.Config{Config: provider.Config{APIKey: key}, Fetcher: f, ReferenceInput: "input image"}, Err: "replicate: Config.ReferenceInput must be an input name"},
		{Name: "bad cost", Config: replicate.Config{Config: provider.Config{APIKey: key, Cost: 4}, Fetcher: f}, Err: "replicate: Config.Cost must be 1 to 3"},
		{Name: "bad output host", Config: replicate.Config{Config: provider.Config{APIKey: key}, Fetcher: f, OutputHosts: []string{"https://x"}}, Err: "replicate: Config.OutputHosts must hold host names"},
		{Name: "sync wait", Config: replicate.Config{Config: provider.Config{APIKey: key}, Fetcher: f, SyncWait: 2 * time.Minute}, Err: "replicate: Config.SyncWait must be at most 1m0s"},
		{Name: "poll interval", Config: replicate.Config{Config: provider.Config{APIKey: key}, Fetcher: f, PollInterval: -time.Second}, Err: "replicate: Config.PollInterval must not be negative"},
	}
}

var down = answer{Status: 503, Body: []byte(`{"title":"Service Unavailable","detail":"down","status":503}`)}

func serverErrors(_ *testing.T, f *fake) {
	f.Queue(opCreate,
		answer{Status: 503, Body: []byte(`{"title":"Service Unavailable","detail":"Replicate is temporarily unavailable","status":503}`)},
		answer{Status: 500, Body: []byte("<html>internal error</html>")})
	f.Queue(opGet, answer{Status: 502, Body: []byte("bad gateway")})
}

// success and failure are the conformance scenarios on this package's fake.
type (
	success = providertest.Success[*fake, replicate.Config]
	failure = providertest.Failure[*fake, replicate.Config]
)

func textToImage(t *testing.T) []success {
	const prompt = "a red panda in a bamboo forest"
	return []success{
		{Name: "the documented request", Request: providertest.T2I(prompt, imagegen.Aspect16x9), Plan: kontext,
			Size: provider.Size{W: 1328, H: 747}, Calls: polled, // 1392x752 cropped to exactly 16:9
			Waits: providertest.Waits(time.Second, time.Second), // PollInterval, on the injected clock
			Check: func(t *testing.T, f *fake) {
				is := is.New(t)
				calls := f.Calls()
				c := calls[0]
				is.Equal(c.path, kontextPath)
				is.Equal(c.header.Get("Authorization"), "Bearer "+key)
				is.Equal(c.header.Get("Content-Type"), "application/json")
				is.Equal(c.header.Get("Prefer"), "wait=60")     // no deadline: the longest wait
				is.Equal(c.header.Get("Cancel-After"), "1800s") // no deadline: Config.MaxDuration's 30 min
				// The body is the documented official-model request, without
				// num_outputs (flux-kontext-pro has none) and asking for PNG.
				want := providertest.JSON(t, providertest.Spec(t, "create.request.official-model.json"))
				in := want.(map[string]any)["input"].(map[string]any)
				delete(in, "num_outputs")
				in["output_format"] = "png"
				is.Equal(providertest.JSON(t, c.raw), want)
				id := calls[1].id
				is.Equal(calls[1].path, "/v1/predictions/"+id) // urls.get
				is.Equal(calls[2].path, "/v1/predictions/"+id)
				is.Equal(calls[1].header.Get("Authorization"), "Bearer "+key)
				is.Equal(f.Fetched(), []string{"https://replicate.delivery/xezq/" + id + "/out-0.png"})
			}},
		{Name: "answered within Prefer: wait", Setup: func(_ *testing.T, f *fake) { f.script = []string{"succeeded"} },
			Plan: kontext, Size: provider.Size{W: 1024, H: 1024}, Calls: []string{opCreate}}, // no polling
		{Name: "polled through starting and processing", Config: replicate.Config{PollInterval: 250 * time.Millisecond},
			Setup: func(_ *testing.T, f *fake) {
				f.script = []string{"starting", "starting", "processing", "processing", "succeeded"}
			},
			Request: providertest.T2I("a fox", imagegen.Aspect3x2), Plan: kontext, Size: provider.Size{W: 1248, H: 832},
			Calls: []string{opCreate, opGet, opGet, opGet, opGet}, Waits: providertest.Waits(250*time.Millisecond, 250*time.Millisecond, 250*time.Millisecond, 250*time.Millisecond)},
		{Name: "a proxy's answer with urls elsewhere is read through BaseURL", Setup: func(_ *testing.T, f *fake) { f.foreignURLs = true },
			Plan: kontext, Size: provider.Size{W: 1024, H: 1024}, Calls: polled, Waits: providertest.Waits(time.Second, time.Second),
			Check: func(t *testing.T, f *fake) { // the token went nowhere else
				gets := f.callsOf(opGet)
				is.New(t).Equal(gets[0].path, "/v1/predictions/"+gets[0].id)
			}},
		{Name: "output on a subdomain of an allowed host", Setup: func(_ *testing.T, f *fake) { f.outputHost = "pbxt.replicate.delivery" },
			Plan: kontext, Size: provider.Size{W: 1024, H: 1024}, Calls: polled, Waits: providertest.Waits(time.Second, time.Second)},
	}
}

func imageToImage(t *testing.T) []success {
	const prompt = "make it look like a watercolor painting"
	cat := providertest.PNG(400, 300)
	big := append(providertest.JPEG(1920, 1080), make([]byte, replicate.MaxDataURIBytes)...)
	webp := []byte("RIFF\x24\x00\x00\x00WEBPVP8 \x18\x00\x00\x00")
	refs := func(_ *testing.T, f *fake) {
		f.refs.Images = map[string]providertest.Image{
			"https://img.example/cat.png": {Data: cat, ContentType: "image/png"},
			"https://img.example/big.jpg": {Data: big, ContentType: "image/jpeg"},
			"http://img.example/big.jpg":  {Data: big, ContentType: "image/jpeg"},
			"https://img.example/a.webp":  {Data: webp, ContentType: "image/webp"},
		}
	}
	sentRef := func(f *fake) string { return f.callsOf(opCreate)[0].input["input_image"].(string) }
	return []success{
		// auto follows the reference: 4:3, answered 1184x880, cropped.
		{Name: "the documented input", Request: providertest.I2I(prompt, imagegen.AspectAuto, "https://img.example/cat.png"), Setup: refs,
			Size: provider.Size{W: 1172, H: 879}, Calls: polled, Waits: providertest.Waits(time.Second, time.Second),
			Check: func(t *testing.T, f *fake) {
				// input_image as a data: URI, aspect_ratio match_input_image,
				// output_format png; no version, no webhook.
				want := providertest.JSON(t, providertest.Spec(t, "create.request.version.json")).(map[string]any)
				in := want["input"].(map[string]any)
				in["prompt"] = prompt
				in["input_image"] = "data:image/png;base64," + base64.StdEncoding.EncodeToString(cat)
				is.New(t).Equal(providertest.JSON(t, f.callsOf(opCreate)[0].raw), map[string]any{"input": in})
			}},
		{Name: "a ratio asked for is sent as it is", Request: providertest.I2I(prompt, imagegen.Aspect2x3, "https://img.example/cat.png"), Setup: refs,
			Size: provider.Size{W: 832, H: 1248}, Calls: polled, Waits: providertest.Waits(time.Second, time.Second),
			Check: func(t *testing.T, f *fake) { is.New(t).Equal(f.callsOf(opCreate)[0].input["aspect_ratio"], "2:3") }},
		{Name: "a large reference is sent as its URL", Request: providertest.I2I("x", imagegen.AspectAuto, "https://img.example/big.jpg"), Setup: refs,
			Size: provider.Size{W: 1328, H: 747}, Calls: polled, Waits: providertest.Waits(time.Second, time.Second), // 16:9
			Check: func(t *testing.T, f *fake) { is.New(t).Equal(sentRef(f), "https://img.example/big.jpg") }},
		{Name: "a large reference on http goes inline", Request: providertest.I2I("x", imagegen.AspectAuto, "http://img.example/big.jpg"), Setup: refs,
			Size: provider.Size{W: 1328, H: 747}, Calls: polled, Waits: providertest.Waits(time.Second, time.Second), // Replicate could not fetch it
			Check: func(t *testing.T, f *fake) { is.New(t).True(strings.HasPrefix(sentRef(f), "data:image/jpeg;base64,")) }},
		{Name: "a WebP reference keeps the answer's ratio", Request: providertest.I2I("x", imagegen.AspectAuto, "https://img.example/a.webp"), Setup: refs,
			Size: provider.Size{W: 1024, H: 1024}, Calls: polled, Waits: providertest.Waits(time.Second, time.Second), // as answered
			Check: func(t *testing.T, f *fake) { is.New(t).True(strings.HasPrefix(sentRef(f), "data:image/webp;base64,")) }},
	}
}

func refusals() []failure {
	failed := func(errorText string) func(*testing.T, *fake) {
		return func(_ *testing.T, f *fake) {
			f.script = []string{"starting", "processing", "failed"}
			f.errorText = errorText
		}
	}
	nothingFetched := func(t *testing.T, f *fake) { is.New(t).Equal(len(f.Fetched()), 0) }
	return []failure{
		// The prediction fails on its own: nothing to cancel.
		{Name: "NSFW (the example)", Setup: failed(""), Causes: []string{"failed"}, Calls: polled, Waits: providertest.Waits(time.Second, time.Second), Check: nothingFetched},
		{Name: "flagged as sensitive", Setup: failed("The input or output was flagged as sensitive. Please try again with different inputs. (E005)"),
			Causes: []string{"failed"}, Calls: polled, Waits: providertest.Waits(time.Second, time.Second), Check: nothingFetched},
		{Name: "a 422 that reads as one", Calls: []string{opCreate}, AnswersTo: opCreate,
			Answers: []answer{{Status: 422, Body: []byte(`{"title":"Input validation failed","detail":"- input: prompt was flagged by the content moderation system\n","status":422}`)}}},
	}
}

func rateLimited(t *testing.T) []success {
	throttled := answer{Status: 429, Body: providertest.Spec(t, "error.429.throttled.json")}
	withRetryAfter := throttled
	withRetryAfter.Header = map[string]string{"Retry-After": "30"}
	return []success{
		{Name: "Retry-After on create", Answers: []answer{withRetryAfter}, AnswersTo: opCreate,
			Calls: []string{opCreate, opCreate, opGet, opGet}, Waits: providertest.Waits(30*time.Second, time.Second, time.Second)}, // Retry-After, then two polls
		{Name: "the body's delay without Retry-After, on a read", Answers: []answer{throttled}, AnswersTo: opGet,
			Calls: []string{opCreate, opGet, opGet, opGet}, Waits: providertest.Waits(time.Second, 30*time.Second, time.Second)}, // "resets in ~30s"
	}
}

func timeouts() []failure {
	return []failure{
		{Name: "the deadline passes during a read: cancelled", Config: replicate.Config{PollInterval: time.Millisecond}, Deadline: 300 * time.Millisecond,
			Answers: []answer{{Hang: true}}, AnswersTo: opGet,
			Causes: []string{"cancelled"}, Calls: []string{opCreate, opGet, opCancel}, Waits: providertest.Waits(time.Millisecond),
			Check: func(t *testing.T, f *fake) {
				is := is.New(t)
				create := f.callsOf(opCreate)[0]
				is.Equal(create.header.Get("Prefer"), "")         // less than a second would be left
				is.Equal(create.header.Get("Cancel-After"), "5s") // the API's minimum
				c := f.callsOf(opCancel)[0]
				is.Equal(c.id, f.callsOf(opGet)[0].id) // the prediction we followed
				is.Equal(c.path, "/v1/predictions/"+c.id+"/cancel")
				is.Equal(c.header.Get("Authorization"), "Bearer "+key)
			}},
		{Name: "the next poll would pass the deadline: cancelled at once", Config: replicate.Config{PollInterval: time.Minute}, Deadline: 20 * time.Second,
			Is: provider.ErrPastDeadline, Calls: []string{opCreate, opCancel}},
	}
}

// failures are the other documented failures.
func failures(t *testing.T) []failure {
	unavailable := providertest.Outcome{Retryable: true, Message: provider.MsgUnavailable}
	badAnswer := providertest.Outcome{Retryable: true, Message: provider.MsgBadAnswer}
	misconfigured := providertest.Outcome{Misconfigured: true, Message: provider.MsgMisconfigured}
	ending := func(status, errorText string) func(*testing.T, *fake) {
		return func(_ *testing.T, f *fake) { f.script, f.errorText = []string{"starting", status}, errorText }
	}
	noOutput := providertest.EditJSON(t, providertest.Spec(t, "prediction.succeeded.image.json"), func(removed map[string]any) {
		removed["output"], removed["data_removed"] = nil, true
	})
	once := []string{opCreate}
	return []failure{
		// A caller without a deadline is bounded by Config.MaxDuration:
		// the prediction is created with it as its Cancel-After, and the
		// next poll would pass it, so it is cancelled at once (without
		// the bound the fake's prediction succeeds).
		{Name: "no deadline: bounded by Config.MaxDuration",
			Config: replicate.Config{Config: provider.Config{MaxDuration: 20 * time.Second}, PollInterval: time.Minute},
			Want:   providertest.Outcome{Retryable: true, Message: provider.MsgTimeout}, Is: provider.ErrPastDeadline,
			Calls: []string{opCreate, opCancel},
			Check: func(t *testing.T, f *fake) {
				is := is.New(t)
				is.True(f.callsOf(opCreate)[0].header.Get("Cancel-After") != "") // the provider ends it too
			}},
		{Name: "server errors run out", Config: replicate.Config{Config: provider.Config{MaxRetries: 1}}, Answers: []answer{down, down, down}, AnswersTo: opCreate,
			Want: unavailable, Calls: []string{opCreate, opCreate}, Waits: []providertest.Wait{providertest.Backoff(0)}},
		{Name: "a read that keeps failing: cancelled", Config: replicate.Config{Config: provider.Config{MaxRetries: 1}},
			Answers: []answer{down, down}, AnswersTo: opGet,
			Want: unavailable, Calls: []string{opCreate, opGet, opGet, opCancel}, Waits: []providertest.Wait{{Min: time.Second, Max: time.Second}, providertest.Backoff(0)}},
		{Name: "a rate limit past the deadline", Deadline: 10 * time.Second,
			Answers: []answer{{Status: 429, Header: map[string]string{"Retry-After": "30"}, Body: providertest.Spec(t, "error.429.throttled.json")}}, AnswersTo: opCreate,
			Want: providertest.Outcome{Retryable: true, Message: provider.MsgBusy}, Calls: once},
		// Predictions that end without an image.
		{Name: "failed", Setup: ending("failed", "CUDA out of memory. Tried to allocate 2.00 GiB"),
			Want:   providertest.Outcome{Retryable: true, Message: "the image model failed to generate the image, please retry later"},
			Causes: []string{"failed", "CUDA out of memory"}, Calls: []string{opCreate, opGet}, Waits: providertest.Waits(time.Second)},
		{Name: "canceled", Setup: ending("canceled", ""), Want: providertest.Outcome{Retryable: true, Message: "the image provider cancelled the generation, please retry later"},
			Causes: []string{"canceled"}, Calls: []string{opCreate, opGet}, Waits: providertest.Waits(time.Second)},
		{Name: "aborted", Setup: ending("aborted", ""), Want: providertest.Outcome{Retryable: true, Message: provider.MsgBusy},
			Causes: []string{"aborted"}, Calls: []string{opCreate, opGet}, Waits: providertest.Waits(time.Second)},
		// Output that cannot be used.
		{Name: "output on another host is not downloaded", Setup: func(_ *testing.T, f *fake) { f.outputHost = "evil.example" },
			Want: providertest.Outcome{Message: provider.MsgBadAnswer}, Causes: []string{`"evil.example"`}, Calls: polled, Waits: providertest.Waits(time.Second, time.Second),
			Check: func(t *testing.T, f *fake) { is.New(t).Equal(len(f.Fetched()), 0) }},
		{Name: "a failed download is retryable", Config: replicate.Config{Fetcher: &providertest.Fetcher{}},
			Want: unavailable, Hides: []string{"replicate.delivery"}, Calls: polled, Waits: providertest.Waits(time.Second, time.Second)}, // the signed URL stays out
		{Name: "no output", Answers: []answer{{Status: 201, Body: noOutput}}, AnswersTo: opCreate, Want: badAnswer, Calls: once},
		// Error answers.
		{Name: "unknown model", Config: replicate.Config{Model: "acme/no-such-model"}, Want: misconfigured, Causes: []string{"Not found"}, Calls: once},
		{Name: "billing", Answers: []answer{{Status: 402, Body: []byte(`{"title":"Insufficient credit","detail":"You have insufficient credit to run this model.","status":402}`)}}, AnswersTo: opCreate,
			Want: misconfigured, Causes: []string{"insufficient credit"}, Calls: once},
		{Name: "validation", Answers: []answer{{Status: 422, Body: providertest.Spec(t, "error.422.validation.json")}}, AnswersTo: opCreate,
			Want: providertest.Outcome{Message: provider.MsgRejected}, Causes: []string{"prompt is required"}, Calls: once},
		{Name: "a reference the model cannot use", Answers: []answer{{Status: 422, Body: []byte(`{"title":"Input validation failed","detail":"- input_image: cannot identify image file","status":422,"invalid_fields":[{"type":"invalid","field":"input.input_image","description":"cannot identify image file"}]}`)}}, AnswersTo: opCreate,
			Want: providertest.Outcome{InvalidInput: true, Message: "the reference image could not be used by the image provider"}, Causes: []string{"input.input_image"}, Calls: once},
		{Name: "a reference that cannot be fetched", Request: providertest.I2I("x", imagegen.Aspect1x1, "https://img.example/missing.png"),
			Want: providertest.Outcome{InvalidInput: true, Message: "image_input[0] could not be downloaded"}}, // never reaches Replicate
		{Name: "an answer that echoes the key", Answers: []answer{{Status: 403, Body: []byte(`{"title":"Forbidden","detail":"token ` + key + ` may not run this model","status":403}`)}}, AnswersTo: opCreate,
			Want: misconfigured, Causes: []string{provider.Redacted}, Calls: once},
	}
}

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

func TestOutputAsAList(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	f.outputs = 2
	m, _ := newModel(t, f, replicate.Config{Model: "black-forest-labs/flux-schnell", Config: provider.Config{Cost: 1}})
	plan, err := m.Plan(providertest.T2I("a fox", imagegen.Aspect9x16))
	is.NoErr(err)
	is.Equal(plan, imagegen.Plan{Model: "replicate/black-forest-labs/flux-schnell", Cost: 1})
	imgs, err := providertest.Generate(context.Background(), m, providertest.T2I("a fox", imagegen.Aspect9x16))
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

func TestPreferWaitAndCancelAfterFollowTheDeadline(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	f.script = []string{"succeeded"}
	m, _ := newModel(t, f, replicate.Config{})
	dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
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
	_, err = providertest.Generate(context.Background(), m, providertest.T2I("a fox", imagegen.Aspect1x1))
	is.NoErr(err)
	is.Equal(f.callsOf(opCreate)[2].header.Get("Prefer"), "")
}

// The caller gives up while a read is under way: the prediction is
// cancelled (the conformance suite's give-up comes between reads).
func TestGiveUpDuringARead(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	f.hangGet = true
	m, _ := newModel(t, f, replicate.Config{})
	cctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-f.hanging // a read is under way
		cancel()
	}()
	_, err := providertest.Generate(cctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
	me := providertest.ModelError(t, err)
	is.True(me.Retryable)
	is.True(errors.Is(err, context.Canceled))
	is.Equal(len(f.callsOf(opCancel)), 1)
}

// The caller gives up while the create call is under way, before any
// prediction id is known: the call goes on long enough to learn the id
// of the prediction it made, which is then cancelled, rather than left
// to run (and be billed) to its end. A create that fails sends no
// cancel: there is nothing to cancel.
func TestGiveUpDuringTheCreate(t *testing.T) {
	for name, tc := range map[string]struct {
		fail    []answer
		cancels int
	}{
		"the prediction is made": {cancels: 1},
		"the create fails":       {fail: []answer{down}, cancels: 0},
	} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			f := newFake(t)
			f.Queue(opCreate, tc.fail...)
			f.holdCreate = make(chan struct{})
			m, _ := newModel(t, f, replicate.Config{})
			cctx, cancel := context.WithCancel(context.Background())
			go func() {
				<-f.hanging // the create is under way
				cancel()
				close(f.holdCreate) // answered after the caller gave up
			}()
			_, err := providertest.Generate(cctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
			me := providertest.ModelError(t, err)
			is.True(me.Retryable)
			if tc.fail == nil {
				is.True(errors.Is(err, context.Canceled)) // else the create's own failure
			}
			is.Equal(len(f.callsOf(opCreate)), 1) // not sent again after the caller gave up
			cancels := f.callsOf(opCancel)
			is.Equal(len(cancels), tc.cancels)
			for _, c := range cancels { // of the prediction the create made
				is.Equal(c.method, "POST")
				is.Equal(c.path, "/v1/predictions/"+c.id+"/cancel")
				f.mu.Lock()
				p, made := f.preds[c.id]
				is.True(made && p.cancelled && len(f.preds) == 1)
				f.mu.Unlock()
			}
		})
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

// TestSeedInput: flux-kontext-pro takes the task's seed (Run's "seed"
// scenario); another model only when Config.SeedInput names its input.
func TestSeedInput(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	req := providertest.MaxSeedT2I("a fox", imagegen.Aspect1x1)
	schnell, _ := newModel(t, f, replicate.Config{Model: "black-forest-labs/flux-schnell"})
	plan, err := schnell.Plan(req)
	is.NoErr(err)
	is.True(!plan.Seeded) // no SeedInput: the task reports no seed
	seeded, _ := newModel(t, f, replicate.Config{Model: "black-forest-labs/flux-schnell", SeedInput: "seed"})
	plan, err = seeded.Plan(req)
	is.NoErr(err)
	is.True(plan.Seeded)
}

// An answer that lists more outputs than provider.MaxAnswerImages is
// refused before any is downloaded (each download holds the worker and
// its bytes in memory); one that lists that many is taken whole.
func TestTooManyOutputsAreNotDownloaded(t *testing.T) {
	for _, n := range []int{provider.MaxAnswerImages, provider.MaxAnswerImages + 1} {
		f := newFake(t)
		f.outputs = n
		m, _ := newModel(t, f, replicate.Config{Model: "black-forest-labs/flux-schnell", Config: provider.Config{Cost: 1, MaxRetries: -1}})
		imgs, err := providertest.Generate(context.Background(), m, providertest.T2I("a fox", imagegen.Aspect1x1))
		if n <= provider.MaxAnswerImages {
			if err != nil || len(imgs) != n {
				t.Fatalf("%d outputs: %d images, %v; want them all", n, len(imgs), err)
			}
			continue
		}
		var me *imagegen.ModelError
		if !errors.As(err, &me) || me.Retryable || me.Message != provider.MsgBadAnswer {
			t.Fatalf("%d outputs: %v; want a bad answer, not retryable", n, err)
		}
		if got := f.Fetched(); len(got) != 0 {
			t.Fatalf("%d outputs: %d downloaded; want none", n, len(got))
		}
	}
}
