package bfl_test

import (
	"encoding/base64"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/bfl"
	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

type (
	success = providertest.Success[*fake, bfl.Config]
	failure = providertest.Failure[*fake, bfl.Config]
)

var (
	pro11 = imagegen.Plan{Model: "bfl/flux-pro-1.1", Cost: 2, Seeded: true}
	// polled is a run's record: submit, then two reads (Pending, Ready),
	// each after a poll interval.
	polled = []string{submitCall, pollCall, pollCall}
	waited = providertest.Waits(bfl.DefaultPollInterval, bfl.DefaultPollInterval)
	// catURL is a reference image of 3:2.
	catURL = "https://img.example/cat.png"
)

// withStatuses scripts the statuses the task's reads answer.
func withStatuses(statuses ...string) func(*testing.T, *fake) {
	return func(_ *testing.T, f *fake) { f.statuses = statuses }
}

// withCat serves the 3:2 reference.
func withCat(_ *testing.T, f *fake) {
	f.refs.Add(catURL, providertest.Image{Data: providertest.PNG(1200, 800), ContentType: "image/png"})
}

// The scenarios every adapter must pass, as BFL's submit-and-poll API
// plays them.
func TestConformance(t *testing.T) {
	busy := []byte(`{"detail":"You have exceeded the maximum number of active tasks (24)."}`)
	kontext := bfl.Config{Model: bfl.ModelFluxKontextPro}
	providertest.Run(t, providertest.Harness[*fake, bfl.Config, *bfl.Model]{
		Provider: "bfl", Key: key, New: bfl.New, NewFake: newFake, NewModel: newModel,
		Constructions: []providertest.Construction[bfl.Config]{
			{Name: "no key", Config: bfl.Config{Fetcher: &providertest.Fetcher{}}, Err: "bfl: Config.APIKey is required"},
			{Name: "no fetcher", Config: bfl.Config{Config: provider.Config{APIKey: key}}, Err: "bfl: Config.Fetcher is required"},
			{Name: "unknown model", Config: bfl.Config{Config: provider.Config{APIKey: key}, Fetcher: &providertest.Fetcher{}, Model: "flux-pro-9"}, Err: `bfl: Config.Model "flux-pro-9" is not one of`},
			{Name: "negative poll interval", Config: bfl.Config{Config: provider.Config{APIKey: key}, Fetcher: &providertest.Fetcher{}, PollInterval: -time.Second}, Err: "bfl: Config.PollInterval must not be negative"},
			{Name: "default", Config: bfl.Config{Config: provider.Config{APIKey: key}, Fetcher: &providertest.Fetcher{}}, Model: "bfl/flux-pro-1.1", Cost: 2},
			{Name: "flux-dev", Config: bfl.Config{Config: provider.Config{APIKey: key}, Fetcher: &providertest.Fetcher{}, Model: "flux-dev"}, Model: "bfl/flux-dev", Cost: 1},
			{Name: "ultra", Config: bfl.Config{Config: provider.Config{APIKey: key}, Fetcher: &providertest.Fetcher{}, Model: "flux-pro-1.1-ultra"}, Model: "bfl/flux-pro-1.1-ultra", Cost: 3},
			{Name: "kontext at a set cost", Config: bfl.Config{Config: provider.Config{APIKey: key, Cost: 3}, Fetcher: &providertest.Fetcher{}, Model: "flux-kontext-pro"}, Model: "bfl/flux-kontext-pro", Cost: 3},
		},
		TextToImage: []success{
			{Name: "the documented request", Plan: pro11, Size: provider.Size{W: 1024, H: 1024}, Calls: polled, Waits: waited,
				Check: func(t *testing.T, f *fake) {
					is := is.New(t)
					want := providertest.JSON(t, providertest.Spec(t, "submit.request.flux-pro-1.1.json")).(map[string]any)
					want["prompt"], want["output_format"] = "a fox", "png"
					is.Equal(f.lastSubmit(t), want)
					calls := f.Calls()
					is.Equal(calls[0].path, "/v1/flux-pro-1.1")
					is.Equal(calls[1].query, "id="+taskID)
					is.Equal(f.Fetched(), []string{sampleURL}) // through the Fetcher
				}},
			{Name: "ultra sends the ratio, and its answer is cropped", Config: bfl.Config{Model: bfl.ModelFluxPro11Ultra},
				Request: providertest.T2I("a harbour at dawn", imagegen.Aspect16x9), Plan: imagegen.Plan{Model: "bfl/flux-pro-1.1-ultra", Cost: 3, Seeded: true},
				Size: provider.Size{W: 2720, H: 1530}, Calls: polled, Waits: waited, // 2720x1536 cropped
				Check: func(t *testing.T, f *fake) {
					in := f.lastSubmit(t)
					is.New(t).Equal(in["aspect_ratio"], "16:9")
					_, sized := in["width"]
					is.New(t).True(!sized)
				}},
			{Name: "a long wait", Plan: pro11, Size: provider.Size{W: 1024, H: 1024},
				Setup: withStatuses("Pending", "Pending", "Pending", "Ready"),
				Calls: []string{submitCall, pollCall, pollCall, pollCall, pollCall},
				Waits: providertest.Waits(bfl.DefaultPollInterval, bfl.DefaultPollInterval, bfl.DefaultPollInterval, bfl.DefaultPollInterval)},
		},
		ImageToImage: []success{
			{Name: "kontext follows the reference on auto", Config: kontext, Setup: withCat,
				Request: providertest.I2I("make it a watercolour", imagegen.AspectAuto, catURL),
				Plan:    imagegen.Plan{Model: "bfl/flux-kontext-pro", Cost: 2, Seeded: true}, Size: provider.Size{W: 1248, H: 832},
				Calls: polled, Waits: waited,
				Check: func(t *testing.T, f *fake) {
					is := is.New(t)
					in := f.lastSubmit(t)
					_, ratio := in["aspect_ratio"]
					is.True(!ratio) // no aspect_ratio: the model follows the reference
					is.Equal(in["input_image"], base64.StdEncoding.EncodeToString(providertest.PNG(1200, 800)))
					is.Equal(f.Fetched(), []string{catURL, sampleURL})
				}},
			{Name: "kontext at a set ratio", Config: kontext, Setup: withCat,
				Request: providertest.I2I("make it a watercolour", imagegen.Aspect16x9, catURL),
				Plan:    imagegen.Plan{Model: "bfl/flux-kontext-pro", Cost: 2, Seeded: true}, Size: provider.Size{W: 1360, H: 765},
				Calls: polled, Waits: waited,
				Check: func(t *testing.T, f *fake) { is.New(t).Equal(f.lastSubmit(t)["aspect_ratio"], "16:9") }},
		},
		Unplannable: []providertest.Unplannable[bfl.Config]{
			{Name: "flux-pro-1.1 takes no reference", Request: providertest.I2I("in watercolour", imagegen.AspectAuto, catURL),
				Field: "scene", Message: "image-to-image is not supported by model flux-pro-1.1 (use flux-kontext-pro)",
				Unplanned: providertest.Outcome{InvalidInput: true, Message: "scene: image-to-image is not supported by model flux-pro-1.1 (use flux-kontext-pro)"}},
			{Name: "kontext takes one reference", Config: kontext, Request: providertest.I2I("in watercolour", imagegen.AspectAuto, catURL, catURL),
				Field: "image_input", Message: "must hold one URL for model flux-kontext-pro (got 2)",
				Unplanned: providertest.Outcome{InvalidInput: true, Message: "image_input: must hold one URL for model flux-kontext-pro (got 2)"}},
		},
		AspectRatios: []providertest.Ratios[*fake, bfl.Config]{{
			Name: "flux-pro-1.1",
			Sent: func(t *testing.T, f *fake) string {
				in := f.lastSubmit(t)
				return provider.Size{W: int(in["width"].(float64)), H: int(in["height"].(float64))}.String()
			},
			Table: `
				auto  1024x1024  1024x1024
				1:1   1024x1024  1024x1024
				4:3   1152x864   1152x864
				3:4   864x1152   864x1152
				3:2   1248x832   1248x832
				2:3   832x1248   832x1248
				16:9  1344x768   1344x756   # cropped
				9:16  768x1344   756x1344   # cropped
			`,
		}},
		Refusals: []failure{
			{Name: "Content Moderated", Setup: withStatuses("Pending", "Content Moderated"),
				Want:   providertest.Outcome{Message: "the generated image was withheld by the provider's moderation"},
				Causes: []string{"Content Moderated", "Moderation Reasons"}, Calls: polled, Waits: waited},
			{Name: "Request Moderated", Setup: withStatuses("Request Moderated"),
				Causes: []string{"Request Moderated"}, Calls: []string{submitCall, pollCall}, Waits: waited[:1]},
		},
		RateLimited: []success{{Plan: pro11, Size: provider.Size{W: 1024, H: 1024},
			Setup: func(_ *testing.T, f *fake) {
				f.Queue(submitCall, answer{Status: 429, Header: map[string]string{"Retry-After": "3"}, Body: busy})
				f.Queue(pollCall, answer{Status: 429, Header: map[string]string{"Retry-After": "2"}, Body: busy})
			},
			Calls: []string{submitCall, submitCall, pollCall, pollCall, pollCall},
			Waits: providertest.Waits(3*time.Second, bfl.DefaultPollInterval, 2*time.Second, bfl.DefaultPollInterval)}},
		ServerErrors: []success{{Plan: pro11, Size: provider.Size{W: 1024, H: 1024},
			Setup: func(_ *testing.T, f *fake) {
				f.Queue(submitCall, answer{Status: 503, Body: []byte(`{"detail":"Service Unavailable"}`)})
				f.Queue(pollCall, answer{Status: 502, Body: []byte("<html>Bad Gateway</html>")})
			},
			Calls: []string{submitCall, submitCall, pollCall, pollCall, pollCall},
			Waits: []providertest.Wait{providertest.Backoff(0), waited[0], providertest.Backoff(0), waited[1]}}},
		Timeouts: []failure{
			{Name: "the deadline comes before the next poll", Deadline: 300 * time.Millisecond, // less than a poll interval
				Setup: withStatuses("Pending"), Causes: []string{"still Pending"}, Calls: []string{submitCall}},
			{Name: "a read hangs", Answers: []answer{{Hang: true}}, AnswersTo: pollCall,
				Calls: []string{submitCall, pollCall}, Waits: waited[:1]},
		},
		BadKey: failure{Causes: []string{"HTTP 403", "Not authenticated"}, Calls: []string{submitCall}},
		Failures: []failure{
			{Name: "Error", Setup: withStatuses("Pending", "Error"), Calls: polled, Waits: waited,
				Want: providertest.Outcome{Retryable: true, Message: "the image model failed to generate the image, please retry later"}, Causes: []string{"task " + taskID + ": Error"}},
			{Name: "Task not found", Setup: withStatuses("Task not found"), Calls: []string{submitCall, pollCall}, Waits: waited[:1],
				Want: providertest.Outcome{Retryable: true, Message: "the image model failed to generate the image, please retry later"}, Causes: []string{"Task not found"}},
			{Name: "an unknown status", Calls: []string{submitCall, pollCall}, Waits: waited[:1],
				Answers: []answer{{Status: 200, Body: providertest.EditJSON(t, providertest.Spec(t, "result.pending.json"), func(doc map[string]any) { doc["status"] = "Exploded" })}}, AnswersTo: pollCall,
				Want: providertest.Outcome{Retryable: true, Message: provider.MsgBadAnswer}, Causes: []string{`status "Exploded"`}},
			{Name: "no credits", Answers: []answer{{Status: 402, Body: providertest.Spec(t, "error.402.json")}}, AnswersTo: submitCall,
				Want: providertest.Outcome{Misconfigured: true, Message: provider.MsgMisconfigured}, Causes: []string{"HTTP 402", "Insufficient credits"}, Calls: []string{submitCall}},
			{Name: "a validation error", Answers: []answer{{Status: 422, Body: providertest.Spec(t, "error.422.validation.json")}}, AnswersTo: submitCall,
				Want: providertest.Outcome{Message: provider.MsgRejected}, Causes: []string{"body.width: Input should be a multiple of 32 (multiple_of)"}, Calls: []string{submitCall}},
			{Name: "Ready without a sample", Calls: polled, Waits: waited,
				Setup: func(t *testing.T, f *fake) {
					f.Queue(pollCall, answer{Status: 200, Body: providertest.Spec(t, "result.pending.json")})
					f.Queue(pollCall, answer{Status: 200, Body: providertest.EditJSON(t, providertest.Spec(t, "result.ready.json"), func(doc map[string]any) { doc["result"] = nil })})
				},
				Want: providertest.Outcome{Retryable: true, Message: provider.MsgBadAnswer}, Causes: []string{"without result.sample"}},
			// A caller without a deadline is bounded by Config.MaxDuration:
			// the next poll would pass it, so the task is given up at once
			// (without the bound the fake's task ends Ready).
			{Name: "no deadline: bounded by Config.MaxDuration",
				Config: bfl.Config{Config: provider.Config{MaxDuration: 20 * time.Second}, PollInterval: time.Minute},
				Want:   providertest.Outcome{Retryable: true, Message: provider.MsgTimeout}, Is: provider.ErrPastDeadline,
				Causes: []string{"still Pending"}, Calls: []string{submitCall}},
			{Name: "the sample cannot be downloaded", Calls: polled, Waits: waited,
				Config: bfl.Config{Fetcher: &providertest.Fetcher{Err: errors.New("unexpected HTTP status 403")}},
				Want:   providertest.Outcome{Retryable: true, Message: provider.MsgUnavailable}, Causes: []string{"downloading the result"}, Hides: []string{"sig=EXAMPLE"}},
		},
		SentSeed: func(t *testing.T, f *fake) *int64 {
			s, ok := f.lastSubmit(t)["seed"].(float64)
			if !ok {
				return nil
			}
			n := int64(s)
			return &n
		},
	})
}

// A polling_url off the API's hosts and the configured one (a spoofed
// answer) is not followed: the adapter reads the result at its own base
// URL, and sends its key nowhere else.
func TestSpoofedPollingURLIsNotFollowed(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	f.pollingURL = "https://api.bfl.ai.evil.example/v1/get_result?id=" + taskID
	m, _ := newModel(t, f, bfl.Config{})
	imgs, err := providertest.Generate(t.Context(), m, providertest.T2I("a fox", imagegen.Aspect1x1))
	is.NoErr(err)
	is.Equal(len(imgs), 1)
	is.Equal(f.Kinds(), polled) // every read reached the fake (the client refuses any other host)
	for _, c := range f.Calls()[1:] {
		is.Equal(c.path, "/v1/get_result")
		is.Equal(c.query, "id="+taskID)
	}
}

// The progress of a Pending task reaches the generation's Progress, as
// a fraction (a percentage is read as one).
func TestProgressIsReported(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	f.statuses = []string{"Pending", "Pending", "Pending", "Ready"}
	f.progress = []any{0.25, 60, nil}
	m, _ := newModel(t, f, bfl.Config{})
	var mu sync.Mutex
	var got []float64
	req := providertest.T2I("a fox", imagegen.Aspect1x1)
	plan, err := m.Plan(req)
	is.NoErr(err)
	_, err = m.Generate(t.Context(), imagegen.Generation{TaskID: "t", Model: plan.Model, Request: req, Attempt: 1, Progress: func(p float64) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, p)
	}})
	is.NoErr(err)
	is.Equal(got, []float64{0.25, 0.6, 0.4}) // the third read carries the example's 0.4
}

// The seed a Ready result reports (result.seed) comes back with the
// image, for the service to record: the one sent, another the API
// chose, or none when the result has none.
func TestSeedFromResult(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	m, _ := newModel(t, f, bfl.Config{})
	req := providertest.MaxSeedT2I("a fox", imagegen.Aspect1x1)
	for _, c := range []struct {
		answer any
		want   *int64
	}{
		{nil, ptr(int64(imagegen.MaxSeed))}, // the one sent
		{77.0, ptr(int64(77))},
		{"null", nil},
	} {
		f.mu.Lock()
		f.answerSeed = c.answer
		f.mu.Unlock()
		imgs, err := providertest.Generate(t.Context(), m, req)
		is.NoErr(err)
		is.Equal(f.lastSubmit(t)["seed"], float64(imagegen.MaxSeed))
		is.Equal(imgs[0].Seed, c.want)
	}
}

func ptr[T any](v T) *T { return &v }

// Requests on the configured base URL carry the key as x-key, and
// nothing else that authenticates.
func TestKeyIsSentAsXKey(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	m, _ := newModel(t, f, bfl.Config{})
	_, err := providertest.Generate(t.Context(), m, providertest.T2I("a fox", imagegen.Aspect1x1))
	is.NoErr(err)
	for _, c := range f.Calls() {
		is.Equal(c.header.Get("x-key"), key)
		is.Equal(c.header.Get("Authorization"), "")
	}
}

// flux-dev is sized like flux-pro-1.1, at its own price.
func TestFluxDevIsSized(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	m, _ := newModel(t, f, bfl.Config{Model: bfl.ModelFluxDev})
	imgs, err := providertest.Generate(t.Context(), m, providertest.T2I("a fox", imagegen.Aspect3x4))
	is.NoErr(err)
	is.Equal(providertest.SizeOf(t, imgs[0]), provider.Size{W: 864, H: 1152})
	in := f.lastSubmit(t)
	is.Equal(f.Calls()[0].path, "/v1/flux-dev")
	is.Equal(in["width"], 864.0)
	is.Equal(in["height"], 1152.0)
}

// A reference the fetcher refuses fails the task as invalid input,
// without a submit.
func TestUnreachableReferenceIsInvalidInput(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	m, _ := newModel(t, f, bfl.Config{Model: bfl.ModelFluxKontextPro})
	_, err := providertest.Generate(t.Context(), m, providertest.I2I("a fox", imagegen.AspectAuto, "https://img.example/missing.png"))
	me := providertest.ModelError(t, err)
	is.True(me.InvalidInput)
	is.Equal(me.Message, "image_input[0] could not be downloaded")
	is.Equal(len(f.Calls()), 0)
}

// The model list names every model New takes, and New refuses others.
func TestModels(t *testing.T) {
	is := is.New(t)
	for _, name := range bfl.Models() {
		m, err := bfl.New(bfl.Config{Config: provider.Config{APIKey: key}, Model: name, Fetcher: &providertest.Fetcher{}})
		is.NoErr(err)
		is.Equal(m.Name(), "bfl/"+name)
		plan, err := m.Plan(providertest.T2I("a fox", imagegen.Aspect1x1))
		is.NoErr(err)
		is.True(plan.Seeded)
	}
	_, err := bfl.New(bfl.Config{Config: provider.Config{APIKey: key}, Model: "flux-kontext-max", Fetcher: &providertest.Fetcher{}})
	is.True(err != nil && strings.Contains(err.Error(), "flux-kontext-max"))
}
