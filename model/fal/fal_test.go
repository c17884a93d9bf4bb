package fal_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/fal"
	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

var ctx = context.Background()

// newModel returns an adapter pointed at f, reaching only f (through
// f.client, and f as its Fetcher unless c has one), with a recording
// clock unless c has a clock, and its debug log.
func newModel(t *testing.T, f *fake, c fal.Config) (*fal.Model, *providertest.InstantClock, *syncLog) {
	t.Helper()
	clock := providertest.Configure(&c.Config, f.srv.URL, key)
	c.HTTPClient = f.client()
	if c.Fetcher == nil {
		c.Fetcher = f
	}
	logs := &syncLog{}
	c.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return providertest.MustNew(t, fal.New, c), clock, logs
}

// polls is the clock's record of a run that polled n+1 times.
func polls(n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = fal.DefaultPollInterval
	}
	return out
}

func TestTextToImage(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	m, clock, _ := newModel(t, f, fal.Config{})
	const prompt = "Photo of a cute dog"

	plan, err := m.Plan(providertest.T2I(prompt, imagegen.Aspect4x3))
	is.NoErr(err)
	is.Equal(plan, imagegen.Plan{Model: "fal/fal-ai/flux/dev", Cost: 1})

	imgs, err := providertest.Generate(ctx, m, providertest.T2I(prompt, imagegen.Aspect4x3))
	is.NoErr(err)
	is.Equal(len(imgs), 1)
	is.Equal(imgs[0].ContentType, "image/jpeg")
	is.Equal(providertest.SizeOf(t, imgs[0]), provider.Size{W: 1024, H: 768})
	is.Equal(f.Fetched(), []string{"https://v3.fal.media/files/rabbit/1024x768.jpeg"}) // from the CDN, through the Fetcher

	// submit, three polls (IN_QUEUE, IN_PROGRESS, COMPLETED), result; no cancel.
	is.Equal(f.kinds(), []string{submitCall, statusCall, statusCall, statusCall, resultCall})
	calls := f.Calls()
	for _, c := range calls {
		is.Equal(c.header.Get("Authorization"), "Key "+key)
	}
	is.Equal(calls[0].path, "/fal-ai/flux/dev")
	is.Equal(calls[1].path, "/fal-ai/flux/requests/"+requestID+"/status") // owner/app only
	is.Equal(calls[1].query, "logs=0")
	is.Equal(calls[4].path, "/fal-ai/flux/requests/"+requestID)
	// The body is the documented request, less the two fields left to
	// the model's defaults.
	want := providertest.JSON(t, example(t, "submit.request.flux-dev.json")).(map[string]any)
	delete(want, "num_inference_steps")
	delete(want, "guidance_scale")
	is.Equal(providertest.JSON(t, calls[0].raw), want)
	is.Equal(clock.Waits(), polls(2)) // on the injected clock, between the polls
}

func TestQueueStatusProgression(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	f.statuses = []string{"in_queue", "in_queue", "in_progress", "in_progress", "completed"}
	m, clock, logs := newModel(t, f, fal.Config{PollInterval: 250 * time.Millisecond})
	_, err := providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
	is.NoErr(err)
	is.Equal(f.count(statusCall), 5)
	is.Equal(clock.Waits(), []time.Duration{250 * time.Millisecond, 250 * time.Millisecond, 250 * time.Millisecond, 250 * time.Millisecond})

	var seen []string
	for _, line := range strings.Split(logs.String(), "\n") {
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
	is.Equal(f.count(cancelCall), 0)
	is.True(!strings.Contains(logs.String(), key))
}

func TestEveryAspectRatio(t *testing.T) {
	want := map[imagegen.AspectRatio]struct {
		sent   string
		result provider.Size
	}{
		imagegen.AspectAuto: {`"square_hd"`, provider.Size{W: 1024, H: 1024}},
		imagegen.Aspect1x1:  {`"square_hd"`, provider.Size{W: 1024, H: 1024}},
		imagegen.Aspect4x3:  {`"landscape_4_3"`, provider.Size{W: 1024, H: 768}},
		imagegen.Aspect3x4:  {`"portrait_4_3"`, provider.Size{W: 768, H: 1024}},
		imagegen.Aspect16x9: {`"landscape_16_9"`, provider.Size{W: 1024, H: 576}},
		imagegen.Aspect9x16: {`"portrait_16_9"`, provider.Size{W: 576, H: 1024}},
		imagegen.Aspect3x2:  {`{"width":1248,"height":832}`, provider.Size{W: 1248, H: 832}},
		imagegen.Aspect2x3:  {`{"width":832,"height":1248}`, provider.Size{W: 832, H: 1248}},
	}
	ratios := append([]imagegen.AspectRatio{imagegen.AspectAuto}, imagegen.AspectRatios()...)
	is.New(t).Equal(len(want), len(ratios)) // every ratio of the enum is in the table
	for _, r := range ratios {
		t.Run(string(r), func(t *testing.T) {
			is := is.New(t)
			f := newFake(t)
			m, _, _ := newModel(t, f, fal.Config{})
			imgs, err := providertest.Generate(ctx, m, providertest.T2I("a lighthouse", r))
			is.NoErr(err)
			var in struct {
				ImageSize json.RawMessage `json:"image_size"`
			}
			is.NoErr(json.Unmarshal(f.Calls()[0].raw, &in))
			is.Equal(string(in.ImageSize), want[r].sent)
			got := providertest.SizeOf(t, imgs[0])
			is.Equal(got, want[r].result)
			if r != imagegen.AspectAuto {
				is.True(got.Is(r)) // exactly the ratio
			}
		})
	}
}

func TestAnswerOfAnotherSizeIsCropped(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	f.answerSize = &provider.Size{W: 1024, H: 1024} // a model that ignores image_size
	m, _, _ := newModel(t, f, fal.Config{Model: "fal-ai/flux/schnell"})
	f.model = "fal-ai/flux/schnell"
	imgs, err := providertest.Generate(ctx, m, providertest.T2I("a lighthouse", imagegen.Aspect16x9))
	is.NoErr(err)
	is.Equal(f.Calls()[0].path, "/fal-ai/flux/schnell")
	is.Equal(providertest.SizeOf(t, imgs[0]), provider.Size{W: 1024, H: 576}) // centre-cropped
	is.Equal(imgs[0].ContentType, "image/png")                                // and re-encoded
}

func TestPNGOutput(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	m, _, _ := newModel(t, f, fal.Config{OutputFormat: "png"})
	imgs, err := providertest.Generate(ctx, m, providertest.T2I("a lighthouse", imagegen.Aspect3x2))
	is.NoErr(err)
	is.Equal(imgs[0].ContentType, "image/png")
	is.True(strings.Contains(string(f.Calls()[0].raw), `"output_format":"png"`))
}

func TestImageToImageIsNotSupported(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	m, _, _ := newModel(t, f, fal.Config{})
	req := providertest.I2I("in watercolour", imagegen.AspectAuto, "https://img.example/cat.png")
	_, err := m.Plan(req)
	var ve *imagegen.ValidationError
	is.True(errors.As(err, &ve))
	is.Equal(ve.Field, "scene")
	_, err = m.Generate(ctx, imagegen.Generation{Request: req})
	me := providertest.ModelError(t, err)
	is.True(!me.Retryable)
	is.Equal(len(f.Calls()), 0)
	is.Equal(len(f.Fetched()), 0)
}

func TestNSFWRefusal(t *testing.T) {
	is := is.New(t)
	body := providertest.EditJSON(t, example(t, "result.flux-dev.json"), func(doc map[string]any) {
		doc["has_nsfw_concepts"] = []any{true}
	})
	f := newFake(t).script(resultCall, answer{Status: 200, Body: body})
	m, _, _ := newModel(t, f, fal.Config{})
	_, err := providertest.Generate(ctx, m, providertest.T2I("something not allowed", imagegen.Aspect1x1))
	me := providertest.ModelError(t, err)
	is.True(me.Refused)
	is.True(!me.Retryable && !me.Misconfigured)
	is.Equal(me.Provider, "fal")
	is.Equal(me.Message, "the image was withheld by the provider's safety checker as possibly unsafe content")
	is.True(strings.Contains(me.Err.Error(), "has_nsfw_concepts"))
	is.Equal(len(f.Fetched()), 0) // the black placeholder is not downloaded
	is.Equal(f.count(resultCall), 1)
	is.Equal(f.count(cancelCall), 0)
}

// contentPolicy is a model error of type content_policy_violation, in
// the shape of examples/error.422.validation.json.
func contentPolicy(t *testing.T) []byte {
	return providertest.EditJSON(t, example(t, "error.422.validation.json"), func(doc map[string]any) {
		doc["detail"] = []any{map[string]any{
			"loc": []any{"body", "prompt"}, "type": "content_policy_violation",
			"msg": "The content could not be processed because it contained material flagged by a content checker.",
			"url": "https://docs.fal.ai/errors#content_policy_violation",
		}}
	})
}

func TestContentPolicyRefusal(t *testing.T) {
	t.Run("at submit", func(t *testing.T) {
		is := is.New(t)
		f := newFake(t).script(submitCall, answer{Status: 422, Body: contentPolicy(t)})
		m, clock, _ := newModel(t, f, fal.Config{})
		_, err := providertest.Generate(ctx, m, providertest.T2I("something not allowed", imagegen.Aspect1x1))
		me := providertest.ModelError(t, err)
		is.True(me.Refused && !me.Retryable)
		is.Equal(me.Message, provider.MsgRefused)
		is.True(strings.Contains(me.Err.Error(), "content_policy_violation"))
		is.True(strings.Contains(me.Err.Error(), "body.prompt"))
		is.Equal(f.kinds(), []string{submitCall})
		is.Equal(len(clock.Waits()), 0)
	})
	t.Run("as the result of a completed request", func(t *testing.T) {
		is := is.New(t)
		f := newFake(t).
			script(statusCall, answer{Status: 200, Body: completedWith(t, "", "content policy")}).
			script(resultCall, answer{Status: 422, Body: contentPolicy(t)})
		m, _, _ := newModel(t, f, fal.Config{})
		_, err := providertest.Generate(ctx, m, providertest.T2I("something not allowed", imagegen.Aspect1x1))
		me := providertest.ModelError(t, err)
		is.True(me.Refused && !me.Retryable)
		is.Equal(f.kinds(), []string{submitCall, statusCall, resultCall})
	})
}

func TestRateLimitThenSuccess(t *testing.T) {
	is := is.New(t)
	busy := []byte(`{"detail":"Too many concurrent requests for this account"}`)
	f := newFake(t).
		script(submitCall, answer{Status: 429, Header: map[string]string{"Retry-After": "7"}, Body: busy}).
		script(statusCall, answer{Status: 429, Header: map[string]string{"Retry-After": "3"}, Body: busy})
	m, clock, _ := newModel(t, f, fal.Config{})
	imgs, err := providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
	is.NoErr(err)
	is.Equal(len(imgs), 1)
	is.Equal(f.kinds(), []string{submitCall, submitCall, statusCall, statusCall, statusCall, statusCall, resultCall})
	// Retry-After honoured on the injected clock, then the polls.
	is.Equal(clock.Waits(), []time.Duration{7 * time.Second, 3 * time.Second, time.Second, time.Second})
}

func TestRateLimitPastTheDeadline(t *testing.T) {
	is := is.New(t)
	f := newFake(t).script(submitCall, answer{Status: 429, Header: map[string]string{"Retry-After": "60"}, Body: []byte(`{"detail":"busy"}`)})
	m, clock, _ := newModel(t, f, fal.Config{})
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	start := time.Now()
	_, err := m.Generate(dctx, imagegen.Generation{Request: providertest.T2I("a fox", imagegen.Aspect1x1)})
	is.True(time.Since(start) < 5*time.Second) // gave up at once
	me := providertest.ModelError(t, err)
	is.True(me.Retryable)
	is.Equal(me.Message, provider.MsgBusy)
	is.Equal(f.kinds(), []string{submitCall})
	is.Equal(len(clock.Waits()), 0)
}

func TestServerErrorThenSuccess(t *testing.T) {
	is := is.New(t)
	scheduling := []byte(`{"detail":"No runner could be allocated","error_type":"runner_scheduling_failure"}`)
	f := newFake(t).
		script(submitCall, answer{Status: 503, Header: map[string]string{"X-Fal-Error-Type": "runner_scheduling_failure"}, Body: scheduling}).
		script(resultCall, answer{Status: 500, Body: []byte(`{"detail":"Internal Server Error","error_type":"internal_error"}`)})
	m, clock, _ := newModel(t, f, fal.Config{})
	imgs, err := providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
	is.NoErr(err)
	is.Equal(len(imgs), 1)
	is.Equal(f.kinds(), []string{submitCall, submitCall, statusCall, statusCall, statusCall, resultCall, resultCall})
	waits := clock.Waits()
	is.Equal(len(waits), 4)
	is.True(waits[0] >= 500*time.Millisecond && waits[0] <= time.Second) // backoff with jitter
	is.Equal(waits[1:3], polls(2))
	is.True(waits[3] >= 500*time.Millisecond && waits[3] <= time.Second)
}

func TestServerErrorsRunOut(t *testing.T) {
	is := is.New(t)
	down := answer{Status: 502, Body: []byte(`{"detail":"incomplete response","error_type":"runner_incomplete_response"}`)}
	f := newFake(t).script(submitCall, down, down, down)
	m, _, _ := newModel(t, f, fal.Config{Config: provider.Config{MaxRetries: 2}})
	_, err := providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
	me := providertest.ModelError(t, err)
	is.True(me.Retryable)
	is.Equal(me.Message, provider.MsgUnavailable)
	is.True(strings.Contains(me.Err.Error(), "runner_incomplete_response"))
	is.Equal(f.count(submitCall), 3)
}

func TestTimeout(t *testing.T) {
	t.Run("the deadline comes before the next poll", func(t *testing.T) {
		is := is.New(t)
		f := newFake(t)
		f.statuses = []string{"in_queue"}
		m, clock, logs := newModel(t, f, fal.Config{})
		tctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond) // less than one poll interval
		defer cancel()
		start := time.Now()
		_, err := m.Generate(tctx, imagegen.Generation{Request: providertest.T2I("a fox", imagegen.Aspect1x1)})
		is.True(time.Since(start) < 5*time.Second)
		me := providertest.ModelError(t, err)
		is.True(me.Retryable)
		is.Equal(me.Message, provider.MsgTimeout)
		is.True(errors.Is(err, context.DeadlineExceeded))
		is.True(strings.Contains(me.Err.Error(), "still IN_QUEUE"))
		// The request is cancelled, with the key, after the poll.
		is.Equal(f.kinds(), []string{submitCall, statusCall, cancelCall})
		c := f.Calls()[2]
		is.Equal(c.path, "/fal-ai/flux/requests/"+requestID+"/cancel")
		is.Equal(c.header.Get("Authorization"), "Key "+key)
		is.True(strings.Contains(logs.String(), "status=CANCELLATION_REQUESTED"))
		is.Equal(len(clock.Waits()), 0)
	})
	t.Run("the context ends during a poll", func(t *testing.T) {
		is := is.New(t)
		f := newFake(t)
		f.hang = true
		m, _, _ := newModel(t, f, fal.Config{})
		tctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := m.Generate(tctx, imagegen.Generation{Request: providertest.T2I("a fox", imagegen.Aspect1x1)})
		is.True(time.Since(start) < 5*time.Second)
		me := providertest.ModelError(t, err)
		is.True(me.Retryable)
		is.Equal(me.Message, provider.MsgTimeout)
		is.True(errors.Is(err, context.DeadlineExceeded))
		is.Equal(f.kinds(), []string{submitCall, statusCall, cancelCall})
	})
	t.Run("the task is cancelled while queued", func(t *testing.T) {
		is := is.New(t)
		f := newFake(t)
		f.statuses = []string{"in_progress"}
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		m, _, logs := newModel(t, f, fal.Config{Config: provider.Config{Clock: cancellingClock{cancel}}})
		_, err := m.Generate(cctx, imagegen.Generation{Request: providertest.T2I("a fox", imagegen.Aspect1x1)})
		me := providertest.ModelError(t, err)
		is.True(me.Retryable)
		is.True(errors.Is(err, context.Canceled))
		is.True(strings.Contains(me.Err.Error(), "still IN_PROGRESS"))
		is.Equal(f.kinds(), []string{submitCall, statusCall, cancelCall}) // cancelled with a context of its own
		is.True(strings.Contains(logs.String(), "status=CANCELLATION_REQUESTED"))
	})
}

// cancellingClock ends the task (cancels its context) when the adapter
// waits for its next poll, and never fires.
type cancellingClock struct{ cancel context.CancelFunc }

func (cancellingClock) Now() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }

func (c cancellingClock) After(time.Duration) <-chan time.Time {
	c.cancel()
	return make(chan time.Time)
}

func TestBadAPIKey(t *testing.T) {
	for _, status := range []int{401, 403} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			is := is.New(t)
			const wrong = "fal-WRONGKEY-9876543210:zyxwvutsrqponmlk"
			f := newFake(t)
			if status == 403 {
				f.script(submitCall, answer{Status: 403, Body: []byte(`{"detail":"User does not have access to this app (key ` + key + `)"}`)})
			}
			c := fal.Config{}
			if status == 401 {
				c.APIKey = wrong
			}
			m, clock, _ := newModel(t, f, c)
			_, err := providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
			me := providertest.ModelError(t, err)
			is.True(me.Misconfigured)
			is.True(!me.Retryable && !me.Refused && !me.InvalidInput)
			is.Equal(me.UserMessage(), "the image service is misconfigured")
			is.True(strings.Contains(me.Err.Error(), fmt.Sprintf("HTTP %d", status)))
			is.True(!strings.Contains(err.Error(), key) && !strings.Contains(err.Error(), wrong))
			is.Equal(f.kinds(), []string{submitCall}) // not retried
			is.Equal(len(clock.Waits()), 0)
		})
	}
}

func TestDocumentedFailures(t *testing.T) {
	requestTimeout := func(t *testing.T) []byte { return example(t, "error.request-error.json") }
	for _, tc := range []struct {
		name      string
		status    int // of the result
		header    map[string]string
		errType   string // of the COMPLETED status
		body      func(t *testing.T) []byte
		retryable bool
		msg       string
		cause     string
	}{
		{"request_timeout", 504, map[string]string{"X-Fal-Error-Type": "request_timeout"}, "request_timeout", requestTimeout, true, provider.MsgTimeout, "HTTP 504 (request_timeout): Request timed out"},
		{"our own request timeout", 504, map[string]string{"X-Fal-Error-Type": "request_timeout", "x-fal-request-timeout-type": "user"}, "request_timeout", requestTimeout, false, provider.MsgTimeout, "request_timeout"},
		{"runner_server_error", 500, nil, "runner_server_error", func(*testing.T) []byte {
			return []byte(`{"detail":"Runner failed","error_type":"runner_server_error"}`)
		}, true, provider.MsgUnavailable, "runner_server_error"},
		{"validation", 422, nil, "", func(t *testing.T) []byte { return example(t, "error.422.validation.json") }, false, provider.MsgRejected,
			"HTTP 422 (value_error.number.not_le): body.num_images: ensure this value is less than or equal to 4"},
		{"client_cancelled", 499, nil, "client_cancelled", func(*testing.T) []byte {
			return []byte(`{"detail":"Request cancelled","error_type":"client_cancelled"}`)
		}, false, provider.MsgRejected, "client_cancelled"},
		{"not retryable, says fal", 503, map[string]string{"X-Fal-Retryable": "false"}, "runner_disconnected", func(*testing.T) []byte {
			return []byte(`{"detail":"Runner disconnected","error_type":"runner_disconnected"}`)
		}, false, provider.MsgUnavailable, "runner_disconnected"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			f := newFake(t).
				script(statusCall, answer{Status: 200, Body: completedWith(t, tc.errType, "failed")}).
				script(resultCall, answer{Status: tc.status, Header: tc.header, Body: tc.body(t)})
			m, clock, _ := newModel(t, f, fal.Config{})
			_, err := providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
			me := providertest.ModelError(t, err)
			is.Equal(me.Retryable, tc.retryable)
			is.True(!me.Refused && !me.Misconfigured)
			is.Equal(me.Message, tc.msg)
			is.True(strings.Contains(me.Err.Error(), tc.cause))
			// The failure of the request is fetched once, not retried.
			is.Equal(f.kinds(), []string{submitCall, statusCall, resultCall})
			is.Equal(len(clock.Waits()), 0)
		})
	}
}

func TestBadAnswers(t *testing.T) {
	for _, tc := range []struct {
		name string
		kind string
		body string
	}{
		{"unknown status", statusCall, `{"status":"EXPLODED","request_id":"` + requestID + `"}`},
		{"submit without request_id", submitCall, `{"status":"IN_QUEUE"}`},
		{"request_id that is not a path segment", submitCall, `{"status":"IN_QUEUE","request_id":"../x"}`},
		{"result without images", resultCall, `{"images":[],"seed":1,"has_nsfw_concepts":[]}`},
		{"result not JSON", resultCall, `<html>`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			f := newFake(t).script(tc.kind, answer{Status: 200, Body: []byte(tc.body)})
			m, _, _ := newModel(t, f, fal.Config{Config: provider.Config{MaxRetries: -1}})
			_, err := providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
			me := providertest.ModelError(t, err)
			is.True(me.Retryable && !me.Refused)
			is.Equal(me.Message, provider.MsgBadAnswer)
			is.Equal(f.count(tc.kind), 1)
			if tc.kind == statusCall { // given up while queued: cancelled
				is.Equal(f.count(cancelCall), 1)
			}
		})
	}
}

func TestForeignQueueURLsAreNotFollowed(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	f.foreignURLs = true // the submit answers https://queue.fal.run/... URLs, not the fake's
	m, _, _ := newModel(t, f, fal.Config{})
	_, err := providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
	is.NoErr(err) // the client refuses (and reports) any call off loopback
	is.Equal(f.kinds(), []string{submitCall, statusCall, statusCall, statusCall, resultCall})
}

func TestWorkflowNamespace(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	f.model, f.app = "workflows/acme/portrait/v2", "workflows/acme/portrait"
	m, _, _ := newModel(t, f, fal.Config{Model: f.model})
	f.foreignURLs = true // so the adapter builds the status URL itself
	_, err := providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
	is.NoErr(err)
	is.Equal(f.Calls()[1].path, "/workflows/acme/portrait/requests/"+requestID+"/status")
	is.Equal(m.Name(), "fal/workflows/acme/portrait/v2")
}

func TestSyncModeDataURI(t *testing.T) {
	is := is.New(t)
	body := providertest.EditJSON(t, example(t, "result.flux-dev.json"), func(doc map[string]any) {
		img := doc["images"].([]any)[0].(map[string]any)
		img["url"] = "data:image/jpeg;base64," + base64.StdEncoding.EncodeToString(providertest.JPEG(1024, 768))
	})
	f := newFake(t).script(resultCall, answer{Status: 200, Body: body})
	m, _, _ := newModel(t, f, fal.Config{})
	imgs, err := providertest.Generate(ctx, m, providertest.T2I("a dog", imagegen.Aspect4x3))
	is.NoErr(err)
	is.Equal(providertest.SizeOf(t, imgs[0]), provider.Size{W: 1024, H: 768})
	is.Equal(len(f.Fetched()), 0)
}

func TestDownloadFailure(t *testing.T) {
	is := is.New(t)
	body := example(t, "result.flux-dev.json") // its URL is not on the fake CDN
	f := newFake(t).script(resultCall, answer{Status: 200, Body: body})
	m, _, _ := newModel(t, f, fal.Config{})
	_, err := providertest.Generate(ctx, m, providertest.T2I("a dog", imagegen.Aspect4x3))
	me := providertest.ModelError(t, err)
	is.True(me.Retryable)
	is.Equal(me.Message, provider.MsgUnavailable)
	is.True(!strings.Contains(err.Error(), "abc123def456")) // the result URL stays out of the error
	is.Equal(f.Fetched(), []string{"https://v3.fal.media/files/rabbit/abc123def456.jpeg"})
}

func TestKeyNeverShows(t *testing.T) {
	is := is.New(t)
	c := fal.Config{Config: provider.Config{APIKey: key}}
	f := newFake(t).
		script(statusCall, answer{Status: 500, Body: []byte(`{"detail":"saw key ` + key + `","error_type":"internal_error"}`)}).
		script(cancelCall, answer{Status: 500, Body: []byte(`{"detail":"saw Key ` + key + `"}`)})
	c.MaxRetries = -1
	m, _, logs := newModel(t, f, c)
	providertest.NoSecretInAdapter(t, key, c, m)
	_, err := providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
	is.True(err != nil)
	providertest.NoSecretAnywhere(t, key, err)
	is.Equal(f.kinds(), []string{submitCall, statusCall, cancelCall}) // given up: cancelled; that failed too, and is logged
	is.True(strings.Contains(logs.String(), "cancelling the request failed"))
	is.True(strings.Contains(logs.String(), "saw Key [redacted]"))
	is.True(!strings.Contains(logs.String(), key))

	f = newFake(t).script(submitCall, answer{Status: 400, Body: []byte(`{"detail":"bad key ` + key + `","error_type":"bad_request"}`)})
	m, _, _ = newModel(t, f, c)
	_, err = providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
	is.True(err != nil)
	providertest.NoSecretAnywhere(t, key, err)
	is.True(!strings.Contains(err.Error(), key))
}

func TestNew(t *testing.T) {
	fetcher := &providertest.Fetcher{}
	for _, tc := range []struct {
		name string
		c    fal.Config
		want string
	}{
		{"no key", fal.Config{Fetcher: fetcher}, "fal: Config.APIKey is required"},
		{"no fetcher", fal.Config{Config: provider.Config{APIKey: key}}, "fal: Config.Fetcher is required"},
		{"bad model", fal.Config{Config: provider.Config{APIKey: key}, Fetcher: fetcher, Model: "flux"}, `fal: Config.Model "flux" is not an endpoint id`},
		{"model with ..", fal.Config{Config: provider.Config{APIKey: key}, Fetcher: fetcher, Model: "fal-ai/../x"}, `fal: Config.Model "fal-ai/../x" is not an endpoint id`},
		{"bare workflow", fal.Config{Config: provider.Config{APIKey: key}, Fetcher: fetcher, Model: "workflows/acme"}, `fal: Config.Model "workflows/acme" is not an endpoint id`},
		{"bad output format", fal.Config{Config: provider.Config{APIKey: key}, Fetcher: fetcher, OutputFormat: "webp"}, "fal: Config.OutputFormat must be jpeg or png"},
		{"negative poll interval", fal.Config{Config: provider.Config{APIKey: key}, Fetcher: fetcher, PollInterval: -time.Second}, "fal: Config.PollInterval must not be negative"},
		{"bad cost", fal.Config{Config: provider.Config{APIKey: key, Cost: 4}, Fetcher: fetcher}, "fal: Config.Cost must be 1 to 3"},
	} {
		t.Run(tc.name, func(t *testing.T) { providertest.NewFails(t, fal.New, tc.c, tc.want) })
	}
	is := is.New(t)
	m, err := fal.New(fal.Config{Config: provider.Config{APIKey: key, Cost: 2}, Fetcher: fetcher, Model: "fal-ai/flux/schnell"})
	is.NoErr(err)
	is.Equal(m.Name(), "fal/fal-ai/flux/schnell")
	plan, err := m.Plan(providertest.T2I("x", imagegen.Aspect9x16))
	is.NoErr(err)
	is.Equal(plan.Cost, int64(2))
}
