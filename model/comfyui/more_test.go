package comfyui_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/comfyui"
	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

// generate runs req on m as the service does, following progress.
func generate(t *testing.T, m *comfyui.Model, req imagegen.Request, progress func(float64)) ([]imagegen.GeneratedImage, error) {
	plan, err := m.Plan(req)
	if err != nil {
		return nil, err
	}
	return m.Generate(t.Context(), imagegen.Generation{TaskID: "task-1", Model: plan.Model, Request: req, Attempt: 1, Progress: progress})
}

// progressOf collects reported progress.
type progressOf struct {
	mu  sync.Mutex
	got []float64
}

func (p *progressOf) report(v float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.got = append(p.got, v)
}

// The websocket's progress messages of the prompt reach
// Generation.Progress as value/max; another prompt's are ignored, and
// its end does not end this one.
func TestProgressOnTheWebsocket(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	f.progress, f.foreign = 5, true
	m, _ := newModel(t, f, comfyui.Config{})
	var p progressOf
	imgs, err := generate(t, m, providertest.T2I("a fox", imagegen.Aspect1x1), p.report)
	is.NoErr(err)
	is.Equal(len(imgs), 1)
	is.Equal(p.got, []float64{0.2, 0.4, 0.6, 0.8, 1})
	is.Equal(f.Kinds(), followed)
}

// A socket that breaks while the prompt runs leaves the prompt followed
// by polling its history.
func TestBrokenWebsocketFallsBackToPolling(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	f.breakSocket = true
	m, clock := newModel(t, f, comfyui.Config{Logger: quiet})
	var p progressOf
	_, err := generate(t, m, providertest.T2I("a fox", imagegen.Aspect1x1), p.report)
	is.NoErr(err)
	is.Equal(p.got, []float64{8.0 / 25}) // the one step before the break (value 8 of 25)
	is.Equal(f.Kinds(), []string{wsCall, promptCall, historyCall, viewCall})
	is.Equal(clock.Waits(), []time.Duration{comfyui.DefaultPollInterval})
}

// ComfyUI down (nothing listening) is a provider outage: retryable,
// after the call's own retries.
func TestComfyUIDownIsRetryable(t *testing.T) {
	is := is.New(t)
	srv := httptest.NewServer(nil)
	base := srv.URL
	srv.Close()
	clock := providertest.NewInstantClock()
	m, err := comfyui.New(comfyui.Config{Config: provider.Config{BaseURL: base, Clock: clock}, Logger: quiet})
	is.NoErr(err)
	_, err = generate(t, m, providertest.T2I("a fox", imagegen.Aspect1x1), nil)
	me := providertest.ModelError(t, err)
	is.True(me.Retryable)
	is.Equal(me.Message, provider.MsgUnavailable)
	is.Equal(len(clock.Waits()), provider.DefaultMaxRetries) // the POST /prompt retried
}

// The Bearer token goes with every call, the websocket's included; a
// server without a proxy gets no Authorization header.
func TestBearerToken(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	m, _ := newModel(t, f, withCat(comfyui.Config{}))
	_, err := generate(t, m, providertest.I2I("x", imagegen.AspectAuto, catURL), nil)
	is.NoErr(err)
	for _, c := range f.Calls() {
		is.Equal(c.header.Get("Authorization"), "Bearer "+key)
	}
	open, err := comfyui.New(comfyui.Config{Config: provider.Config{BaseURL: f.Server.URL, HTTPClient: providertest.LoopbackClient(t, f.Server), MaxRetries: -1}, Logger: quiet})
	is.NoErr(err)
	_, err = generate(t, open, providertest.T2I("x", imagegen.Aspect1x1), nil)
	is.True(err != nil) // the fake's proxy wants the token
	for _, c := range f.Calls()[len(followed)+1:] {
		is.Equal(c.header.Get("Authorization"), "")
	}
}

// Each generation follows its prompt under a client_id of its own.
func TestEachGenerationHasItsClientID(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	m, _ := newModel(t, f, comfyui.Config{})
	for range 2 {
		_, err := generate(t, m, providertest.T2I("a fox", imagegen.Aspect1x1), nil)
		is.NoErr(err)
	}
	p := f.prompts(t)
	is.True(p[0]["client_id"] != p[1]["client_id"])
	is.True(strings.HasPrefix(p[0]["client_id"].(string), "imagegen-"))
}

// An operator's image-to-image workflow with two references gets both,
// uploaded, in order; numbers are numbers and text is replaced inside
// longer strings.
func TestTwoReferenceWorkflow(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	wf := []byte(`{
		"1": {"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": "{{checkpoint}}"}},
		"2": {"class_type": "LoadImage", "inputs": {"image": "{{image}}"}},
		"3": {"class_type": "LoadImage", "inputs": {"image": "{{image_2}}"}},
		"4": {"class_type": "CLIPTextEncode", "inputs": {"text": "{{prompt}} in the style of the second picture", "clip": ["1", 1]}},
		"5": {"class_type": "EmptyLatentImage", "inputs": {"width": "{{width}}", "height": "{{height}}", "batch_size": 1}},
		"6": {"class_type": "KSampler", "inputs": {"seed": "{{seed}}", "steps": 20, "cfg": 7, "sampler_name": "euler", "scheduler": "normal", "denoise": 1, "model": ["1", 0], "positive": ["4", 0], "negative": ["4", 0], "latent_image": ["5", 0]}},
		"7": {"class_type": "VAEDecode", "inputs": {"samples": ["6", 0], "vae": ["1", 2]}},
		"9": {"class_type": "SaveImage", "inputs": {"filename_prefix": "x", "images": ["7", 0]}}
	}`)
	c := withCat(comfyui.Config{Name: "blend", Workflows: comfyui.Workflows{ImageToImage: wf}})
	c.Fetcher.(*providertest.Fetcher).Add("https://img.example/style.png", providertest.Image{Data: providertest.PNG(100, 100), ContentType: "image/png"})
	m, _ := newModel(t, f, c)
	req := providertest.I2I("a cat", imagegen.Aspect16x9, catURL, "https://img.example/style.png")
	seed := int64(7)
	req.Seed = &seed
	plan, err := m.Plan(req)
	is.NoErr(err)
	is.Equal(plan, imagegen.Plan{Model: "comfyui/blend", Cost: 1, Seeded: true})
	_, err = generate(t, m, req, nil)
	is.NoErr(err)
	is.Equal(f.node(t, "2", "image"), "uploaded-imagegen-task-1-1-0.png")
	is.Equal(f.node(t, "3", "image"), "uploaded-imagegen-task-1-1-1.png")
	is.Equal(f.node(t, "4", "text"), "a cat in the style of the second picture")
	is.Equal([]any{f.node(t, "5", "width"), f.node(t, "5", "height"), f.node(t, "6", "seed")}, []any{1408.0, 792.0, 7.0})
	_, err = m.Plan(providertest.T2I("x", imagegen.Aspect1x1))
	is.True(err != nil) // no text-to-image workflow
}

// ReadWorkflows finds <name>.json and <name>.img2img.json, and refuses
// names that are paths.
func TestReadWorkflows(t *testing.T) {
	is := is.New(t)
	dir := fstest.MapFS{
		"portrait.json":         {Data: []byte(`{"t2i":1}`)},
		"portrait.img2img.json": {Data: []byte(`{"i2i":1}`)},
		"sketch.img2img.json":   {Data: []byte(`{"i2i":2}`)},
	}
	w, found, err := comfyui.ReadWorkflows(dir, "portrait")
	is.NoErr(err)
	is.True(found)
	is.Equal(string(w.TextToImage), `{"t2i":1}`)
	is.Equal(string(w.ImageToImage), `{"i2i":1}`)
	w, found, err = comfyui.ReadWorkflows(dir, "sketch")
	is.NoErr(err)
	is.True(found && w.TextToImage == nil)
	_, found, err = comfyui.ReadWorkflows(dir, "sd_xl_base_1.0.safetensors")
	is.NoErr(err)
	is.True(!found) // a checkpoint
	for _, bad := range []string{"../etc/passwd", "a/b", ""} {
		_, _, err = comfyui.ReadWorkflows(dir, bad)
		is.True(err != nil)
	}
}

// A socket that stays open but misses the end of the prompt (a
// connection that died without closing) does not hold the generation
// until its deadline: the history, read every HistoryCheck meanwhile,
// has the prompt, and the generation ends.
func TestHistoryCheckedWhileOnTheWebsocket(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	f.silent = true
	m, _ := newModel(t, f, comfyui.Config{HistoryCheck: 50 * time.Millisecond, Logger: quiet})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	plan, err := m.Plan(providertest.T2I("a fox", imagegen.Aspect1x1))
	is.NoErr(err)
	imgs, err := m.Generate(ctx, imagegen.Generation{TaskID: "t", Model: plan.Model, Request: providertest.T2I("a fox", imagegen.Aspect1x1), Attempt: 1})
	is.NoErr(err)
	is.Equal(len(imgs), 1)
	is.Equal(f.Kinds(), []string{wsCall, promptCall, historyCall, historyCall, viewCall})
}
