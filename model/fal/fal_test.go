package fal_test

import (
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/fal"
	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

var (
	fluxDev = imagegen.Plan{Model: "fal/fal-ai/flux/dev", Cost: 1, Seeded: true}
	// queued is a run's record of calls: submit, three polls (IN_QUEUE,
	// IN_PROGRESS, COMPLETED), result; and polled its waits.
	queued = []string{submitCall, statusCall, statusCall, statusCall, resultCall}
	polled = providertest.Waits(fal.DefaultPollInterval, fal.DefaultPollInterval)
	// abandoned: given up while queued, the request is cancelled.
	abandoned = []string{submitCall, statusCall, cancelCall}
)

// The scenarios every adapter must pass, as fal's queue plays them.
func TestConformance(t *testing.T) {
	busy := []byte(`{"detail":"Too many concurrent requests for this account"}`)
	providertest.Run(t, providertest.Harness[*fake, fal.Config, *fal.Model]{
		Provider: "fal", Key: key, New: fal.New, NewFake: newFake, NewModel: newModel,
		Constructions: constructions(),

		TextToImage: textToImage(t),
		// fal-ai/flux/dev's documented input takes no reference image.
		Unplannable: []providertest.Unplannable[fal.Config]{{Request: providertest.I2I("in watercolour", imagegen.AspectAuto, "https://img.example/cat.png"),
			Field: "scene", Message: "image-to-image is not supported by model fal-ai/flux/dev",
			Unplanned: providertest.Outcome{Message: "image-to-image is not supported by this model"}}},
		AspectRatios: []providertest.Ratios[*fake, fal.Config]{{
			Sent: func(t *testing.T, f *fake) string {
				var in struct {
					ImageSize json.RawMessage `json:"image_size"`
				}
				for _, c := range f.Calls() { // the latest submit
					if c.kind == submitCall {
						providertest.Must(t, json.Unmarshal(c.raw, &in))
					}
				}
				return string(in.ImageSize)
			},
			Table: `
				auto  "square_hd"                  1024x1024
				1:1   "square_hd"                  1024x1024
				4:3   "landscape_4_3"              1024x768
				3:4   "portrait_4_3"               768x1024
				16:9  "landscape_16_9"             1024x576
				9:16  "portrait_16_9"              576x1024
				3:2   {"width":1248,"height":832}  1248x832
				2:3   {"width":832,"height":1248}  832x1248
			`,
		}},
		Refusals: refusals(t),
		RateLimited: []success{{
			Setup: func(t *testing.T, f *fake) {
				f.Queue(submitCall, answer{Status: 429, Header: map[string]string{"Retry-After": "7"}, Body: busy})
				f.Queue(statusCall, answer{Status: 429, Header: map[string]string{"Retry-After": "3"}, Body: busy})
			},
			ContentType: "image/jpeg", Calls: []string{submitCall, submitCall, statusCall, statusCall, statusCall, statusCall, resultCall},
			Waits: providertest.Waits(7*time.Second, 3*time.Second, time.Second, time.Second), // Retry-After honoured, then the polls
		}},
		ServerErrors: []success{{
			Setup: func(t *testing.T, f *fake) {
				f.Queue(submitCall, answer{Status: 503, Header: map[string]string{"X-Fal-Error-Type": "runner_scheduling_failure"},
					Body: []byte(`{"detail":"No runner could be allocated","error_type":"runner_scheduling_failure"}`)})
				f.Queue(resultCall, answer{Status: 500, Body: []byte(`{"detail":"Internal Server Error","error_type":"internal_error"}`)})
			},
			ContentType: "image/jpeg", Calls: []string{submitCall, submitCall, statusCall, statusCall, statusCall, resultCall, resultCall},
			Waits: []providertest.Wait{providertest.Backoff(0), polled[0], polled[1], providertest.Backoff(0)},
		}},
		Timeouts: []failure{
			{Name: "the deadline comes before the next poll", Deadline: 500 * time.Millisecond, // less than one poll interval
				Setup:  func(_ *testing.T, f *fake) { f.statuses = []string{"in_queue"} },
				Causes: []string{"still IN_QUEUE"}, Calls: abandoned,
				Check: func(t *testing.T, f *fake) { // the request is cancelled, with the key, after the poll
					is := is.New(t)
					c := f.Calls()[2]
					is.Equal(c.path, "/fal-ai/flux/requests/"+requestID+"/cancel")
					is.Equal(c.header.Get("Authorization"), "Key "+key)
					is.True(strings.Contains(f.logs.String(), "status=CANCELLATION_REQUESTED"))
				}},
			{Name: "the context ends during a poll", Answers: []answer{{Hang: true}}, AnswersTo: statusCall, Calls: abandoned},
		},
		BadKey: failure{Causes: []string{"HTTP 401"}, Calls: []string{submitCall}},
		// The caller gives up while the request is queued: it is
		// cancelled, with a context of its own.
		GiveUp: &failure{Setup: func(_ *testing.T, f *fake) { f.statuses = []string{"in_progress"} },
			Causes: []string{"still IN_PROGRESS"}, Calls: abandoned,
			Check: func(t *testing.T, f *fake) {
				is.New(t).True(strings.Contains(f.logs.String(), "status=CANCELLATION_REQUESTED"))
			}},
		Failures: append(documentedFailures(t), append(failures(t),
			// A caller without a deadline is bounded by Config.MaxDuration:
			// the next poll would pass it, so the request is cancelled
			// (without the bound the fake's request completes).
			failure{Name: "no deadline: bounded by Config.MaxDuration",
				Config: fal.Config{Config: provider.Config{MaxDuration: 20 * time.Second}, PollInterval: time.Minute},
				Want:   providertest.Outcome{Retryable: true, Message: provider.MsgTimeout}, Is: provider.ErrPastDeadline,
				Causes: []string{"still IN_QUEUE"}, Calls: abandoned})...),
		// flux takes a seed; the service draws one when none is sent.
		SentSeed: func(t *testing.T, f *fake) *int64 {
			var seed *int64
			for _, c := range f.Calls() { // the latest submit
				if c.kind == submitCall {
					var in struct {
						Seed *int64 `json:"seed"`
					}
					providertest.Must(t, json.Unmarshal(c.raw, &in))
					seed = in.Seed
				}
			}
			return seed
		},
	})
}

func constructions() []providertest.Construction[fal.Config] {
	fetcher := &providertest.Fetcher{}
	return []providertest.Construction[fal.Config]{
		{Name: "no key", Config: fal.Config{Fetcher: fetcher}, Err: "fal: Config.APIKey is required"},
		{Name: "no fetcher", Config: fal.Config{Config: provider.Config{APIKey: key}}, Err: "fal: Config.Fetcher is required"},
		{Name: "bad model", Config: fal.Config{Config: provider.Config{APIKey: key}, Fetcher: fetcher, Model: "flux"}, Err: `fal: Config.Model "flux" is not an endpoint id`},
		{Name: "model with ..", Config: fal.Config{Config: provider.Config{APIKey: key}, Fetcher: fetcher, Model: "fal-ai/../x"}, Err: `fal: Config.Model "fal-ai/../x" is not an endpoint id`},
		{Name: "bare workflow", Config: fal.Config{Config: provider.Config{APIKey: key}, Fetcher: fetcher, Model: "workflows/acme"}, Err: `fal: Config.Model "workflows/acme" is not an endpoint id`},
		{Name: "bad output format", Config: fal.Config{Config: provider.Config{APIKey: key}, Fetcher: fetcher, OutputFormat: "webp"}, Err: "fal: Config.OutputFormat must be jpeg or png"},
		{Name: "negative poll interval", Config: fal.Config{Config: provider.Config{APIKey: key}, Fetcher: fetcher, PollInterval: -time.Second}, Err: "fal: Config.PollInterval must not be negative"},
		{Name: "bad cost", Config: fal.Config{Config: provider.Config{APIKey: key, Cost: 4}, Fetcher: fetcher}, Err: "fal: Config.Cost must be 1 to 3"},
		{Name: "fal-ai/flux/schnell", Config: fal.Config{Config: provider.Config{APIKey: key, Cost: 2}, Fetcher: fetcher, Model: "fal-ai/flux/schnell"}, Model: "fal/fal-ai/flux/schnell", Cost: 2},
	}
}

// success and failure are the conformance scenarios on this package's fake.
type (
	success = providertest.Success[*fake, fal.Config]
	failure = providertest.Failure[*fake, fal.Config]
)

func textToImage(t *testing.T) []success {
	const prompt = "Photo of a cute dog"
	dataURI := providertest.EditJSON(t, providertest.Spec(t, "result.flux-dev.json"), func(doc map[string]any) {
		img := doc["images"].([]any)[0].(map[string]any)
		img["url"] = "data:image/jpeg;base64," + base64.StdEncoding.EncodeToString(providertest.JPEG(1024, 768))
	})
	return []success{
		{Name: "the documented request", Request: providertest.T2I(prompt, imagegen.Aspect4x3), Plan: fluxDev,
			ContentType: "image/jpeg", Size: provider.Size{W: 1024, H: 768}, Calls: queued, Waits: polled, // on the injected clock, between the polls
			Check: func(t *testing.T, f *fake) {
				is := is.New(t)
				is.Equal(f.cdn.Asked(), []string{"https://v3.fal.media/files/rabbit/1024x768.jpeg"}) // from the CDN, through the Fetcher
				calls := f.Calls()
				for _, c := range calls {
					is.Equal(c.header.Get("Authorization"), "Key "+key)
				}
				is.Equal(calls[0].path, "/fal-ai/flux/dev")
				is.Equal(calls[1].path, "/fal-ai/flux/requests/"+requestID+"/status") // owner/app only
				is.Equal(calls[1].query, "logs=0")
				is.Equal(calls[4].path, "/fal-ai/flux/requests/"+requestID)
				// The body is the documented request, less the two fields left
				// to the model's defaults.
				want := providertest.JSON(t, providertest.Spec(t, "submit.request.flux-dev.json")).(map[string]any)
				delete(want, "num_inference_steps")
				delete(want, "guidance_scale")
				is.Equal(providertest.JSON(t, calls[0].raw), want)
			}},
		{Name: "the queue's statuses, polled", Config: fal.Config{PollInterval: 250 * time.Millisecond}, Plan: fluxDev,
			Setup: func(_ *testing.T, f *fake) {
				f.statuses = []string{"in_queue", "in_queue", "in_progress", "in_progress", "completed"}
			},
			ContentType: "image/jpeg", Size: provider.Size{W: 1024, H: 1024},
			Calls: append(append([]string{submitCall}, slices.Repeat([]string{statusCall}, 5)...), resultCall),
			Waits: providertest.Waits(250*time.Millisecond, 250*time.Millisecond, 250*time.Millisecond, 250*time.Millisecond),
			Check: func(t *testing.T, f *fake) {
				is := is.New(t)
				var seen []string
				for _, line := range strings.Split(f.logs.String(), "\n") {
					if strings.Contains(line, `msg="fal: request status"`) {
						if strings.Contains(line, "IN_QUEUE") {
							is.True(strings.Contains(line, "queue_position=2"))
						}
						is.True(strings.Contains(line, "request_id="+requestID))
						_, after, _ := strings.Cut(line, "status=")
						seen = append(seen, strings.Fields(after)[0])
					}
				}
				is.Equal(seen, []string{"IN_QUEUE", "IN_QUEUE", "IN_PROGRESS", "IN_PROGRESS", "COMPLETED"})
				is.True(!strings.Contains(f.logs.String(), key))
			}},
		{Name: "an answer of another size is cropped, and re-encoded", Config: fal.Config{Model: "fal-ai/flux/schnell"},
			Setup: func(_ *testing.T, f *fake) {
				f.model = "fal-ai/flux/schnell"
				f.answerSize = &provider.Size{W: 1024, H: 1024} // a model that ignores image_size
			},
			Request: providertest.T2I("a lighthouse", imagegen.Aspect16x9), Plan: imagegen.Plan{Model: "fal/fal-ai/flux/schnell", Cost: 1, Seeded: true},
			Size: provider.Size{W: 1024, H: 576}, Calls: queued, Waits: polled},
		{Name: "PNG output", Config: fal.Config{OutputFormat: "png"}, Request: providertest.T2I("a lighthouse", imagegen.Aspect3x2), Plan: fluxDev,
			Size: provider.Size{W: 1248, H: 832}, Calls: queued, Waits: polled,
			Check: func(t *testing.T, f *fake) {
				is.New(t).True(strings.Contains(string(f.Calls()[0].raw), `"output_format":"png"`))
			}},
		{Name: "foreign queue URLs are not followed", Plan: fluxDev, ContentType: "image/jpeg", Size: provider.Size{W: 1024, H: 1024},
			Setup: func(_ *testing.T, f *fake) { f.foreignURLs = true }, // the client refuses (and reports) any call off loopback
			Calls: queued, Waits: polled},
		{Name: "a workflow's namespace", Config: fal.Config{Model: "workflows/acme/portrait/v2"},
			Setup: func(_ *testing.T, f *fake) {
				f.model, f.app = "workflows/acme/portrait/v2", "workflows/acme/portrait"
				f.foreignURLs = true // so the adapter builds the status URL itself
			},
			Plan: imagegen.Plan{Model: "fal/workflows/acme/portrait/v2", Cost: 1, Seeded: true}, ContentType: "image/jpeg", Size: provider.Size{W: 1024, H: 1024}, Calls: queued, Waits: polled,
			Check: func(t *testing.T, f *fake) {
				is.New(t).Equal(f.Calls()[1].path, "/workflows/acme/portrait/requests/"+requestID+"/status")
			}},
		{Name: "a sync-mode data URI", Answers: []answer{{Status: 200, Body: dataURI}}, AnswersTo: resultCall, Request: providertest.T2I("a dog", imagegen.Aspect4x3), Plan: fluxDev,
			ContentType: "image/jpeg", Size: provider.Size{W: 1024, H: 768}, Calls: queued, Waits: polled,
			Check: func(t *testing.T, f *fake) { is.New(t).Equal(len(f.cdn.Asked()), 0) }},
	}
}

// contentPolicy is a model error of type content_policy_violation, in
// the shape of testdata/error.422.validation.json.
func contentPolicy(t *testing.T) []byte {
	return providertest.EditJSON(t, providertest.Spec(t, "error.422.validation.json"), func(doc map[string]any) {
		doc["detail"] = []any{map[string]any{
			"loc": []any{"body", "prompt"}, "type": "content_policy_violation",
			"msg": "The content could not be processed because it contained material flagged by a content checker.",
			"url": "https://docs.fal.ai/errors#content_policy_violation",
		}}
	})
}

func refusals(t *testing.T) []failure {
	nsfw := providertest.EditJSON(t, providertest.Spec(t, "result.flux-dev.json"), func(doc map[string]any) {
		doc["has_nsfw_concepts"] = []any{true}
	})
	return []failure{
		{Name: "NSFW", Answers: []answer{{Status: 200, Body: nsfw}}, AnswersTo: resultCall,
			Want:   providertest.Outcome{Message: "the image was withheld by the provider's safety checker as possibly unsafe content"},
			Causes: []string{"has_nsfw_concepts"}, Calls: queued, Waits: polled,
			Check: func(t *testing.T, f *fake) { is.New(t).Equal(len(f.cdn.Asked()), 0) }}, // the black placeholder is not downloaded
		{Name: "content policy at submit", Answers: []answer{{Status: 422, Body: contentPolicy(t)}}, AnswersTo: submitCall,
			Causes: []string{"content_policy_violation", "body.prompt"}, Calls: []string{submitCall}},
		{Name: "content policy as the result of a completed request",
			Setup: func(t *testing.T, f *fake) {
				f.Queue(statusCall, answer{Status: 200, Body: completedWith(t, "", "content policy")})
				f.Queue(resultCall, answer{Status: 422, Body: contentPolicy(t)})
			},
			Causes: []string{"content_policy_violation"}, Calls: []string{submitCall, statusCall, resultCall}},
	}
}

// documentedFailures are requests that completed with an error: the
// failure is fetched once, not retried.
func documentedFailures(t *testing.T) []failure {
	requestTimeout := providertest.Spec(t, "error.request-error.json")
	completed := func(status int, header map[string]string, errType string, body []byte) func(*testing.T, *fake) {
		return func(t *testing.T, f *fake) {
			f.Queue(statusCall, answer{Status: 200, Body: completedWith(t, errType, "failed")})
			f.Queue(resultCall, answer{Status: status, Header: header, Body: body})
		}
	}
	once := []string{submitCall, statusCall, resultCall}
	timedOut := map[string]string{"X-Fal-Error-Type": "request_timeout"}
	return []failure{
		{Name: "request_timeout", Setup: completed(504, timedOut, "request_timeout", requestTimeout),
			Want: providertest.Outcome{Retryable: true, Message: provider.MsgTimeout}, Causes: []string{"HTTP 504 (request_timeout): Request timed out"}, Calls: once},
		{Name: "our own request timeout", Setup: completed(504, map[string]string{"X-Fal-Error-Type": "request_timeout", "x-fal-request-timeout-type": "user"}, "request_timeout", requestTimeout),
			Want: providertest.Outcome{Message: provider.MsgTimeout}, Causes: []string{"request_timeout"}, Calls: once},
		{Name: "runner_server_error", Setup: completed(500, nil, "runner_server_error", []byte(`{"detail":"Runner failed","error_type":"runner_server_error"}`)),
			Want: providertest.Outcome{Retryable: true, Message: provider.MsgUnavailable}, Causes: []string{"runner_server_error"}, Calls: once},
		{Name: "validation", Setup: completed(422, nil, "", providertest.Spec(t, "error.422.validation.json")), Want: providertest.Outcome{Message: provider.MsgRejected},
			Causes: []string{"HTTP 422 (value_error.number.not_le): body.num_images: ensure this value is less than or equal to 4"}, Calls: once},
		{Name: "client_cancelled", Setup: completed(499, nil, "client_cancelled", []byte(`{"detail":"Request cancelled","error_type":"client_cancelled"}`)),
			Want: providertest.Outcome{Message: provider.MsgRejected}, Causes: []string{"client_cancelled"}, Calls: once},
		{Name: "not retryable, says fal", Setup: completed(503, map[string]string{"X-Fal-Retryable": "false"}, "runner_disconnected", []byte(`{"detail":"Runner disconnected","error_type":"runner_disconnected"}`)),
			Want: providertest.Outcome{Message: provider.MsgUnavailable}, Causes: []string{"runner_disconnected"}, Calls: once},
	}
}

// failures are the other failures: errors before the request completes,
// answers that cannot be used, and answers that echo the key.
func failures(t *testing.T) []failure {
	noRetry := fal.Config{Config: provider.Config{MaxRetries: -1}}
	badAnswer := providertest.Outcome{Retryable: true, Message: provider.MsgBadAnswer}
	down := answer{Status: 502, Body: []byte(`{"detail":"incomplete response","error_type":"runner_incomplete_response"}`)}
	many := providertest.EditJSON(t, providertest.Spec(t, "result.flux-dev.json"), func(doc map[string]any) {
		img := doc["images"].([]any)[0]
		imgs := make([]any, provider.MaxAnswerImages+1)
		for i := range imgs {
			imgs[i] = img
		}
		doc["images"] = imgs
	})
	return []failure{
		// Refused before any is downloaded: each download holds the worker.
		{Name: "more pictures than an answer may hold", Answers: []answer{{Status: 200, Body: many}}, AnswersTo: resultCall,
			Want:   providertest.Outcome{Message: provider.MsgBadAnswer},
			Causes: []string{"more than the 16"}, Calls: queued, Waits: polled,
			Check: func(t *testing.T, f *fake) { is.New(t).Equal(len(f.cdn.Asked()), 0) }},
		{Name: "no access to the app", Answers: []answer{{Status: 403, Body: []byte(`{"detail":"User does not have access to this app (key ` + key + `)"}`)}}, AnswersTo: submitCall,
			Want: providertest.Outcome{Misconfigured: true, Message: provider.MsgMisconfigured}, Causes: []string{"HTTP 403"}, Calls: []string{submitCall}},
		{Name: "a rate limit past the deadline", Deadline: 10 * time.Second,
			Answers: []answer{{Status: 429, Header: map[string]string{"Retry-After": "60"}, Body: []byte(`{"detail":"busy"}`)}}, AnswersTo: submitCall,
			Want: providertest.Outcome{Retryable: true, Message: provider.MsgBusy}, Calls: []string{submitCall}},
		{Name: "server errors run out", Config: fal.Config{Config: provider.Config{MaxRetries: 2}}, Answers: []answer{down, down, down}, AnswersTo: submitCall,
			Want: providertest.Outcome{Retryable: true, Message: provider.MsgUnavailable}, Causes: []string{"runner_incomplete_response"},
			Calls: []string{submitCall, submitCall, submitCall}, Waits: []providertest.Wait{providertest.Backoff(0), providertest.Backoff(1)}},
		{Name: "unknown status", Config: noRetry, Answers: []answer{{Status: 200, Body: []byte(`{"status":"EXPLODED","request_id":"` + requestID + `"}`)}}, AnswersTo: statusCall,
			Want: badAnswer, Calls: abandoned}, // given up while queued: cancelled
		{Name: "submit without request_id", Config: noRetry, Answers: []answer{{Status: 200, Body: []byte(`{"status":"IN_QUEUE"}`)}}, AnswersTo: submitCall, Want: badAnswer, Calls: []string{submitCall}},
		{Name: "request_id that is not a path segment", Config: noRetry, Answers: []answer{{Status: 200, Body: []byte(`{"status":"IN_QUEUE","request_id":"../x"}`)}}, AnswersTo: submitCall, Want: badAnswer, Calls: []string{submitCall}},
		{Name: "result without images", Config: noRetry, Answers: []answer{{Status: 200, Body: []byte(`{"images":[],"seed":1,"has_nsfw_concepts":[]}`)}}, AnswersTo: resultCall, Want: badAnswer, Calls: queued, Waits: polled},
		{Name: "result not JSON", Config: noRetry, Answers: []answer{{Status: 200, Body: []byte(`<html>`)}}, AnswersTo: resultCall, Want: badAnswer, Calls: queued, Waits: polled},
		{Name: "a download that fails", Answers: []answer{{Status: 200, Body: providertest.Spec(t, "result.flux-dev.json")}}, AnswersTo: resultCall, // its URL is not on the fake CDN
			Request: providertest.T2I("a dog", imagegen.Aspect4x3),
			Want:    providertest.Outcome{Retryable: true, Message: provider.MsgUnavailable}, Hides: []string{"abc123def456"}, Calls: queued, Waits: polled, // the result URL stays out of the error
			Check: func(t *testing.T, f *fake) {
				is.New(t).Equal(f.cdn.Asked(), []string{"https://v3.fal.media/files/rabbit/abc123def456.jpeg"})
			}},
		{Name: "a status and a cancel that echo the key", Config: noRetry,
			Setup: func(t *testing.T, f *fake) {
				f.Queue(statusCall, answer{Status: 500, Body: []byte(`{"detail":"saw key ` + key + `","error_type":"internal_error"}`)})
				f.Queue(cancelCall, answer{Status: 500, Body: []byte(`{"detail":"saw Key ` + key + `"}`)})
			},
			Want: providertest.Outcome{Retryable: true, Message: provider.MsgUnavailable}, Causes: []string{provider.Redacted}, Calls: abandoned,
			Check: func(t *testing.T, f *fake) { // given up: cancelled; that failed too, and is logged
				is := is.New(t)
				is.True(strings.Contains(f.logs.String(), "cancelling the request failed"))
				is.True(strings.Contains(f.logs.String(), "saw Key [redacted]"))
				is.True(!strings.Contains(f.logs.String(), key))
			}},
		{Name: "a submit that echoes the key", Answers: []answer{{Status: 400, Body: []byte(`{"detail":"bad key ` + key + `","error_type":"bad_request"}`)}}, AnswersTo: submitCall,
			Want: providertest.Outcome{Message: provider.MsgRejected}, Causes: []string{provider.Redacted}, Calls: []string{submitCall}},
	}
}

// newModel returns an adapter pointed at f, reaching only f (through
// f.client, and f's CDN as its Fetcher unless c has one), with a recording
// clock unless c has a clock, and its debug log in f.logs.
func newModel(t *testing.T, f *fake, c fal.Config) (*fal.Model, *providertest.InstantClock) {
	t.Helper()
	clock := providertest.Configure(&c.Config, f.Server.URL, key)
	c.HTTPClient = providertest.LoopbackClient(f.T, f.Server)
	if c.Fetcher == nil {
		c.Fetcher = &f.cdn
	}
	c.Logger = slog.New(slog.NewTextHandler(&f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return providertest.MustNew(t, fal.New, c), clock
}
