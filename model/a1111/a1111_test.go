package a1111_test

import (
	"context"
	"encoding/base64"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/model/a1111"
	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

type (
	success = providertest.Success[*fake, a1111.Config]
	failure = providertest.Failure[*fake, a1111.Config]
)

var (
	plan   = imagegen.Plan{Model: "a1111", Cost: 1, Seeded: true}
	catURL = "https://img.example/cat.png"
	// abandoned: the call timed out while the job ran; it is ours, so it
	// is interrupted.
	abandoned = []string{txt2imgCall, taskProgressCall, interruptCall}
)

func withCat(c a1111.Config) a1111.Config {
	c.Fetcher = &providertest.Fetcher{Images: map[string]providertest.Image{catURL: {Data: providertest.PNG(1200, 800), ContentType: "image/png"}}}
	return c
}

// The scenarios every adapter must pass, as an sdapi server plays them.
func TestConformance(t *testing.T) {
	oom := providertest.Spec(t, "error.500.out-of-memory.json")
	providertest.Run(t, providertest.Harness[*fake, a1111.Config, *a1111.Model]{
		Provider: "a1111", Key: key, New: a1111.New, NewFake: newFake, NewModel: newModel,
		Constructions: []providertest.Construction[a1111.Config]{
			{Name: "no base URL", Err: "a1111: Config.BaseURL is required"},
			{Name: "a bad base URL", Config: a1111.Config{Config: provider.Config{BaseURL: "127.0.0.1:7860"}}, Err: "a1111: Config.BaseURL must be an absolute http(s) URL"},
			{Name: "a bad resolution", Config: a1111.Config{Config: provider.Config{BaseURL: "http://gpu:7860"}, Resolution: 100}, Err: "a1111: Config.Resolution must be 256 to 2048"},
			{Name: "too many steps", Config: a1111.Config{Config: provider.Config{BaseURL: "http://gpu:7860"}, Steps: 500}, Err: "a1111: Config.Steps must be 1 to 150"},
			{Name: "a bad denoising strength", Config: a1111.Config{Config: provider.Config{BaseURL: "http://gpu:7860"}, DenoisingStrength: 1.5}, Err: "a1111: Config.DenoisingStrength must be above 0"},
			{Name: "no key: a server without auth", Config: a1111.Config{Config: provider.Config{BaseURL: "http://gpu:7860"}}, Model: "a1111", Cost: 1},
			{Name: "a checkpoint", Config: a1111.Config{Config: provider.Config{BaseURL: "http://gpu:7860", APIKey: key, Cost: 2}, Checkpoint: "sd_xl_base_1.0.safetensors"}, Model: "a1111/sd_xl_base_1.0.safetensors", Cost: 2},
		},
		TextToImage: []success{
			{Name: "the documented fields", Plan: plan, Size: provider.Size{W: 1024, H: 1024}, Calls: []string{txt2imgCall},
				Check: func(t *testing.T, f *fake) {
					is := is.New(t)
					b := f.last(t)
					is.Equal(b["prompt"], "a fox")
					is.Equal(b["seed"], -1.0) // none asked: the server's random
					is.Equal([]any{b["width"], b["height"], b["steps"], b["batch_size"], b["n_iter"]}, []any{1024.0, 1024.0, 25.0, 1.0, 1.0})
					is.Equal(b["force_task_id"], "imagegen-task-1-1")
					is.Equal(b["send_images"], true)
					is.Equal(b["save_images"], false)
					_, override := b["override_settings"]
					is.True(!override) // the server's checkpoint
				}},
			{Name: "a checkpoint, a sampler and a negative prompt",
				Config: a1111.Config{Checkpoint: "sd_xl_base_1.0.safetensors [31e35c80fc]", Sampler: "DPM++ 2M", NegativePrompt: "blurry", Steps: 30},
				Plan:   imagegen.Plan{Model: "a1111/sd_xl_base_1.0.safetensors [31e35c80fc]", Cost: 1, Seeded: true},
				Size:   provider.Size{W: 1024, H: 1024}, Calls: []string{txt2imgCall},
				Check: func(t *testing.T, f *fake) {
					is := is.New(t)
					b := f.last(t)
					is.Equal(b["override_settings"], map[string]any{"sd_model_checkpoint": "sd_xl_base_1.0.safetensors [31e35c80fc]"})
					is.Equal(b["override_settings_restore_afterwards"], true)
					is.Equal(b["sampler_name"], "DPM++ 2M")
					is.Equal(b["negative_prompt"], "blurry")
					is.Equal(b["steps"], 30.0)
				}},
			{Name: "an SD 1.5 resolution", Config: a1111.Config{Resolution: 512}, Request: providertest.T2I("a fox", imagegen.Aspect16x9),
				Plan: plan, Size: provider.Size{W: 640, H: 360}, Calls: []string{txt2imgCall}},
			{Name: "another size is cropped", Setup: func(_ *testing.T, f *fake) { f.answerSize = &provider.Size{W: 1024, H: 1024} },
				Request: providertest.T2I("a fox", imagegen.Aspect4x3), Plan: plan, Size: provider.Size{W: 1024, H: 768}, Calls: []string{txt2imgCall}},
		},
		ImageToImage: []success{
			{Name: "the reference as base64 init_images", Config: withCat(a1111.Config{}),
				Request: providertest.I2I("as a watercolour", imagegen.AspectAuto, catURL), Plan: plan,
				Size: provider.Size{W: 1248, H: 832}, Calls: []string{img2imgCall}, // 3:2, the reference's
				Check: func(t *testing.T, f *fake) {
					is := is.New(t)
					b := f.last(t)
					is.Equal(b["init_images"], []any{base64.StdEncoding.EncodeToString(providertest.PNG(1200, 800))})
					is.Equal(b["denoising_strength"], 0.6)
					is.Equal(b["resize_mode"], 1.0) // crop and resize: no distortion
				}},
		},
		Unplannable: []providertest.Unplannable[a1111.Config]{{Name: "two references", Request: providertest.I2I("x", imagegen.AspectAuto, catURL, catURL),
			Field: "image_input", Message: "must hold one URL for model a1111 (got 2)",
			Unplanned: providertest.Outcome{InvalidInput: true, Message: "image_input: must hold one URL for model a1111 (got 2)"}}},
		AspectRatios: []providertest.Ratios[*fake, a1111.Config]{{
			Sent: func(t *testing.T, f *fake) string {
				b := f.last(t)
				return provider.Size{W: int(b["width"].(float64)), H: int(b["height"].(float64))}.String()
			},
			Table: `
				auto  1024x1024  1024x1024
				1:1   1024x1024  1024x1024
				16:9  1408x792   1408x792
				9:16  792x1408   792x1408
				4:3   1184x888   1184x888
				3:4   888x1184   888x1184
				3:2   1248x832   1248x832
				2:3   832x1248   832x1248
			`,
		}},
		NoContentPolicy: "an sdapi server runs what it is given; a safety filter, if the operator installs one, answers an image",
		RateLimited: []success{{Name: "a proxy's 429", Plan: plan, Size: provider.Size{W: 1024, H: 1024},
			Answers: []answer{{Status: 429, Header: map[string]string{"Retry-After": "4"}, Body: []byte(`{"detail":"Too Many Requests"}`)}}, AnswersTo: txt2imgCall,
			Calls: []string{txt2imgCall, txt2imgCall}, Waits: providertest.Waits(4 * time.Second)}},
		ServerErrors: []success{{Name: "out of memory, then a restarting server", Plan: plan, Size: provider.Size{W: 1024, H: 1024},
			Answers: []answer{{Status: 500, Body: oom}, {Status: 502, Body: []byte("<html>502 Bad Gateway</html>")}}, AnswersTo: txt2imgCall,
			Calls: []string{txt2imgCall, txt2imgCall, txt2imgCall}, Waits: []providertest.Wait{providertest.Backoff(0), providertest.Backoff(1)}}},
		Timeouts: []failure{{Name: "the job outlives the deadline: ours, so interrupted", Answers: []answer{{Hang: true}}, AnswersTo: txt2imgCall,
			Calls: abandoned, Causes: []string{"job imagegen-task-1-1 interrupted"},
			Check: func(t *testing.T, f *fake) {
				is.New(t).Equal(f.Calls()[1].body["id_task"], "imagegen-task-1-1")
			}}},
		BadKey: failure{Causes: []string{"HTTP 401", "Incorrect username or password"}, Calls: []string{txt2imgCall}},
		Failures: []failure{
			{Name: "out of memory every time", Answers: []answer{{Status: 500, Body: oom}, {Status: 500, Body: oom}, {Status: 500, Body: oom}, {Status: 500, Body: oom}}, AnswersTo: txt2imgCall,
				Want: providertest.Outcome{Retryable: true, Message: provider.MsgUnavailable}, Causes: []string{"HTTP 500 (OutOfMemoryError)", "CUDA out of memory"},
				Calls: []string{txt2imgCall, txt2imgCall, txt2imgCall, txt2imgCall}, Waits: []providertest.Wait{providertest.Backoff(0), providertest.Backoff(1), providertest.Backoff(2)}},
			{Name: "a refused request", Answers: []answer{{Status: 422, Body: providertest.Spec(t, "error.422.validation.json")}}, AnswersTo: txt2imgCall,
				Want: providertest.Outcome{Message: provider.MsgRejected}, Causes: []string{"HTTP 422", "value is not a valid integer"}, Calls: []string{txt2imgCall}},
			{Name: "no sdapi (started without --api)", Answers: []answer{{Status: 404, Body: providertest.Spec(t, "error.404.json")}}, AnswersTo: txt2imgCall,
				Want: providertest.Outcome{Misconfigured: true, Message: provider.MsgMisconfigured}, Causes: []string{"HTTP 404"}, Calls: []string{txt2imgCall}},
			// The credentials go as Basic auth: a page that echoes the
			// request's headers holds them in base64, not as configured.
			{Name: "a proxy's 403 that echoes the Authorization header", Answers: []answer{{Status: 403, Body: []byte("<html>403 Forbidden: Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(key)) + "</html>")}}, AnswersTo: txt2imgCall,
				Want: providertest.Outcome{Misconfigured: true, Message: provider.MsgMisconfigured}, Causes: []string{"HTTP 403", "Authorization: Basic [redacted]"},
				Hides: []string{base64.StdEncoding.EncodeToString([]byte(key))}, Calls: []string{txt2imgCall}},
			{Name: "no image", Answers: []answer{{Status: 200, Body: []byte(`{"images":[],"parameters":{},"info":"{}"}`)}}, AnswersTo: txt2imgCall,
				Want: providertest.Outcome{Retryable: true, Message: provider.MsgBadAnswer}, Causes: []string{"no image"}, Calls: []string{txt2imgCall}},
			{Name: "an image that is not base64", Answers: []answer{{Status: 200, Body: []byte(`{"images":["%%%"],"parameters":{},"info":"{}"}`)}}, AnswersTo: txt2imgCall,
				Want: providertest.Outcome{Retryable: true, Message: provider.MsgBadAnswer}, Causes: []string{"not base64"}, Calls: []string{txt2imgCall}},
			{Name: "an unreachable reference", Config: withCat(a1111.Config{}), Request: providertest.I2I("x", imagegen.AspectAuto, "https://img.example/missing.png"),
				Want: providertest.Outcome{InvalidInput: true, Message: "image_input[0] could not be downloaded"}},
		},
		SentSeed: func(t *testing.T, f *fake) *int64 {
			s := int64(f.last(t)["seed"].(float64))
			if s == -1 {
				return nil
			}
			return &s
		},
	})
}

// generate runs req on m as the service does, following progress into
// got.
func generate(ctx context.Context, m *a1111.Model, req imagegen.Request, progress func(float64)) ([]imagegen.GeneratedImage, error) {
	plan, err := m.Plan(req)
	if err != nil {
		return nil, err
	}
	return m.Generate(ctx, imagegen.Generation{TaskID: "task-1", Model: plan.Model, Request: req, Attempt: 1, Progress: progress})
}

// While the generation runs, the server's progress is read
// (GET /sdapi/v1/progress) and reported, each read between two of
// /internal/progress (naming the job's force_task_id) that say the job
// is the one running.
func TestProgressIsFollowed(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	f.progress = []float64{0.2, 0.55, 0.9}
	f.release = make(chan struct{})
	log := &progressLog{after: func(n int) {
		if n == 3 {
			close(f.release) // the job ends once its progress was read three times
		}
	}}
	done := generateInBackground(t, f, log)
	select {
	case err := <-done:
		is.NoErr(err)
	case <-time.After(10 * time.Second):
		t.Fatal("the generation did not end")
	}
	is.Equal(log.values(), []float64{0.2, 0.55, 0.9})
	var reads []string
	for _, c := range f.Calls() {
		switch c.kind {
		case taskProgressCall:
			is.Equal(c.body["id_task"], "imagegen-task-1-1")
			reads = append(reads, "ours?")
		case progressCall:
			reads = append(reads, "progress")
		}
	}
	is.Equal(reads[:6], []string{"ours?", "progress", "ours?", "progress", "ours?", "progress"})
	for i, r := range reads {
		if r == "progress" { // asked about the job just before, and again after
			is.Equal(reads[i-1], "ours?")
			is.True(i+1 == len(reads) || reads[i+1] == "ours?")
		}
	}
}

// A read of the server's progress made as the job ended and another
// client's started (/internal/progress said ours before the read, and
// not after) is that job's, not reported.
func TestProgressOfTheNextJobIsNotReported(t *testing.T) {
	f := newFake(t)
	f.otherJob = true           // after the two answers below: another client's job runs
	f.progress = []float64{0.9} // the one read, of the next job
	f.Queue(taskProgressCall, answer{Status: 200, Body: providertest.Spec(t, "internal-progress.active.json")})
	f.Queue(taskProgressCall, answer{Status: 200, Body: providertest.Spec(t, "internal-progress.waiting.json")})
	f.release = make(chan struct{})
	var log progressLog
	done := generateInBackground(t, f, &log)
	testenv.Eventually(t, 10*time.Second, "the read of the next job's progress, and more", func() bool {
		n := 0
		for _, c := range f.Calls() {
			if c.kind == progressCall || c.kind == taskProgressCall {
				n++
			}
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.progress) == 0 && n >= 5
	})
	close(f.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := log.values(); len(got) != 0 {
		t.Errorf("reported %v, read after the job stopped running; want nothing", got)
	}
}

// progressLog collects the progress a generation reports.
type progressLog struct {
	mu    sync.Mutex
	got   []float64
	after func(n int) // when set, told how many were reported after each
}

func (l *progressLog) report(p float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, p)
	if l.after != nil {
		l.after(len(l.got))
	}
}

func (l *progressLog) values() []float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.got)
}

// generateInBackground runs a text-to-image generation on f, reading
// its progress every 10 ms into log; the channel gets its error.
func generateInBackground(t *testing.T, f *fake, log *progressLog) <-chan error {
	m, _ := newModel(t, f, a1111.Config{ProgressInterval: 10 * time.Millisecond, Config: provider.Config{Clock: imagegen.SystemClock{}}})
	done := make(chan error, 1)
	go func() {
		_, err := generate(t.Context(), m, providertest.T2I("a fox", imagegen.Aspect1x1), log.report)
		done <- err
	}()
	return done
}

// A generation that follows no progress reads none.
func TestNoProgressReadWhenNotFollowed(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	m, clock := newModel(t, f, a1111.Config{})
	_, err := generate(t.Context(), m, providertest.T2I("a fox", imagegen.Aspect1x1), nil)
	is.NoErr(err)
	is.Equal(f.Kinds(), []string{txt2imgCall})
	is.Equal(len(clock.Waits()), 0)
}

// When the caller gives up while another client's job runs on the
// server (this one still waits in its queue), nothing is interrupted.
func TestOnlyOurJobIsInterrupted(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	f.otherJob = true
	f.Queue(txt2imgCall, answer{Hang: true})
	m, _ := newModel(t, f, a1111.Config{})
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	_, err := generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1), nil)
	me := providertest.ModelError(t, err)
	is.True(me.Retryable)
	is.True(strings.Contains(me.Err.Error(), "not running: nothing interrupted"))
	is.Equal(f.Kinds(), []string{txt2imgCall, taskProgressCall})
}

// Credentials go as Basic auth; a server without --api-auth gets no
// Authorization header.
func TestBasicAuth(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	m, _ := newModel(t, f, a1111.Config{})
	_, err := generate(t.Context(), m, providertest.T2I("a fox", imagegen.Aspect1x1), nil)
	is.NoErr(err)
	is.Equal(f.Calls()[0].header.Get("Authorization"), "Basic "+base64.StdEncoding.EncodeToString([]byte(key)))

	open, err := a1111.New(a1111.Config{Config: provider.Config{BaseURL: f.Server.URL, HTTPClient: providertest.LoopbackClient(t, f.Server)}})
	is.NoErr(err)
	_, err = generate(t.Context(), open, providertest.T2I("a fox", imagegen.Aspect1x1), nil)
	is.True(err != nil) // the fake wants auth
	is.Equal(f.Calls()[1].header.Get("Authorization"), "")
}

// The seed the answer's info reports comes back with the image
// (GeneratedImage.Seed), for the service to record: the one sent, or
// another the server chose; an info without one reports none.
func TestSeedFromInfo(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	m, _ := newModel(t, f, a1111.Config{})
	imgs, err := generate(t.Context(), m, providertest.MaxSeedT2I("a fox", imagegen.Aspect1x1), nil)
	is.NoErr(err)
	is.Equal(*imgs[0].Seed, int64(imagegen.MaxSeed))

	other := int64(77)
	f.answerSeed = &other
	imgs, err = generate(t.Context(), m, providertest.MaxSeedT2I("a fox", imagegen.Aspect4x3), nil)
	is.NoErr(err)
	is.Equal(f.last(t)["seed"], float64(imagegen.MaxSeed)) // the task's was sent
	is.Equal(*imgs[0].Seed, other)

	png := base64.StdEncoding.EncodeToString(providertest.PNG(1024, 1024))
	f.Queue(txt2imgCall, answer{Status: 200, Body: []byte(`{"images":["` + png + `"],"parameters":{},"info":"not json"}`)})
	imgs, err = generate(t.Context(), m, providertest.MaxSeedT2I("a fox", imagegen.Aspect1x1), nil)
	is.NoErr(err)
	is.Equal(imgs[0].Seed, nil)
}

// A reference in a format the server may not read is converted to PNG
// before it is sent.
func TestReferenceConvertedToPNG(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	c := withCat(a1111.Config{})
	c.Fetcher.(*providertest.Fetcher).Add("https://img.example/cat.gif", providertest.Image{Data: gif(t), ContentType: "image/gif"})
	m, _ := newModel(t, f, c)
	_, err := generate(t.Context(), m, providertest.I2I("x", imagegen.AspectAuto, "https://img.example/cat.gif"), nil)
	is.NoErr(err)
	init := f.last(t)["init_images"].([]any)[0].(string)
	data, err := base64.StdEncoding.DecodeString(init)
	is.NoErr(err)
	is.Equal(provider.ContentType(data), "image/png")
}

// An image sent as a data: URI (as some sdapi servers do) is read like
// plain base64.
func TestDataURIImage(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	png := base64.StdEncoding.EncodeToString(providertest.PNG(1024, 1024))
	f.Queue(txt2imgCall, answer{Status: 200, Body: []byte(`{"images":["data:image/png;base64,` + png + `"],"parameters":{},"info":"{\"seed\": 5}"}`)})
	m, _ := newModel(t, f, a1111.Config{})
	imgs, err := generate(t.Context(), m, providertest.T2I("a fox", imagegen.Aspect1x1), nil)
	is.NoErr(err)
	is.Equal(providertest.SizeOf(t, imgs[0]), provider.Size{W: 1024, H: 1024})
}

// A server that is down (nothing listening) is a provider outage:
// retryable, after the call's own retries.
func TestServerDownIsRetryable(t *testing.T) {
	is := is.New(t)
	srv := httptest.NewServer(nil)
	base := srv.URL
	srv.Close()
	clock := providertest.NewInstantClock()
	m, err := a1111.New(a1111.Config{Config: provider.Config{BaseURL: base, Clock: clock}})
	is.NoErr(err)
	_, err = generate(t.Context(), m, providertest.T2I("a fox", imagegen.Aspect1x1), nil)
	me := providertest.ModelError(t, err)
	is.True(me.Retryable)
	is.Equal(me.Message, provider.MsgUnavailable)
	is.Equal(len(clock.Waits()), provider.DefaultMaxRetries)
}
