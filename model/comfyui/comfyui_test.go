package comfyui_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/comfyui"
	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

type (
	success = providertest.Success[*fake, comfyui.Config]
	failure = providertest.Failure[*fake, comfyui.Config]
)

var (
	builtin = imagegen.Plan{Model: "comfyui/sd_xl_base_1.0.safetensors", Cost: 1, Seeded: true}
	// followed: the websocket is opened, the prompt queued and followed
	// to its end there, its history read at once and its image viewed.
	followed = []string{wsCall, promptCall, historyCall, viewCall}
	catURL   = "https://img.example/cat.png"
	quiet    = slog.New(slog.DiscardHandler)
)

func withCat(c comfyui.Config) comfyui.Config {
	c.Fetcher = &providertest.Fetcher{Images: map[string]providertest.Image{catURL: {Data: providertest.PNG(1200, 800), ContentType: "image/png"}}}
	c.Logger = quiet
	return c
}

// portrait is an operator's workflow: the built-in one with the prompt
// inside a longer text and a fixed negative prompt.
func portrait(t *testing.T) []byte {
	data, err := os.ReadFile("workflows/text-to-image.json")
	providertest.Must(t, err)
	return bytes.Replace(data, []byte(`"{{prompt}}"`), []byte(`"a studio portrait of {{prompt}}, soft light"`), 1)
}

// The scenarios every adapter must pass, as a ComfyUI server plays them.
func TestConformance(t *testing.T) {
	polling := comfyui.Config{NoWebsocket: true, Logger: quiet}
	providertest.Run(t, providertest.Harness[*fake, comfyui.Config, *comfyui.Model]{
		Provider: "comfyui", Key: key, New: comfyui.New, NewFake: newFake, NewModel: newModel,
		Constructions: []providertest.Construction[comfyui.Config]{
			{Name: "no base URL", Err: "comfyui: Config.BaseURL is required"},
			{Name: "a bad resolution", Config: comfyui.Config{Config: provider.Config{BaseURL: "http://gpu:8188"}, Resolution: 64}, Err: "comfyui: Config.Resolution must be 256 to 4096"},
			{Name: "a workflow that is not the API format", Config: comfyui.Config{Config: provider.Config{BaseURL: "http://gpu:8188"}, Workflows: comfyui.Workflows{TextToImage: []byte(`{"nodes":[],"links":[]}`)}},
				Err: `comfyui: Config.Workflows.TextToImage: node "links" has no class_type and inputs: not the API format`},
			{Name: "a workflow without {{prompt}}", Config: comfyui.Config{Config: provider.Config{BaseURL: "http://gpu:8188"}, Workflows: comfyui.Workflows{TextToImage: []byte(`{"1":{"class_type":"SaveImage","inputs":{}}}`)}},
				Err: "comfyui: Config.Workflows.TextToImage: no {{prompt}} placeholder"},
			{Name: "an unknown placeholder", Config: comfyui.Config{Config: provider.Config{BaseURL: "http://gpu:8188"}, Workflows: comfyui.Workflows{TextToImage: []byte(`{"1":{"class_type":"X","inputs":{"text":"{{prompt}} {{style}}"}}}`)}},
				Err: "comfyui: Config.Workflows.TextToImage: unknown placeholder {{style}}"},
			{Name: "a number inside text", Config: comfyui.Config{Config: provider.Config{BaseURL: "http://gpu:8188"}, Workflows: comfyui.Workflows{TextToImage: []byte(`{"1":{"class_type":"X","inputs":{"text":"{{prompt}} {{seed}}"}}}`)}},
				Err: "comfyui: Config.Workflows.TextToImage: {{seed}} must be a whole value"},
			{Name: "image-to-image without {{image}}", Config: comfyui.Config{Config: provider.Config{BaseURL: "http://gpu:8188"}, Workflows: comfyui.Workflows{ImageToImage: []byte(`{"1":{"class_type":"X","inputs":{"text":"{{prompt}}"}}}`)}},
				Err: "comfyui: Config.Workflows.ImageToImage: no {{image}} placeholder"},
			{Name: "the default checkpoint", Config: comfyui.Config{Config: provider.Config{BaseURL: "http://gpu:8188"}}, Model: "comfyui", Cost: 1},
			{Name: "a checkpoint at a cost", Config: comfyui.Config{Config: provider.Config{BaseURL: "http://gpu:8188", Cost: 2}, Checkpoint: "v1-5-pruned-emaonly.safetensors"}, Model: "comfyui/v1-5-pruned-emaonly.safetensors", Cost: 2},
			{Name: "an operator's workflow", Config: comfyui.Config{Config: provider.Config{BaseURL: "http://gpu:8188"}, Name: "portrait", Workflows: comfyui.Workflows{TextToImage: portrait(t)}}, Model: "comfyui/portrait", Cost: 1},
		},
		TextToImage: []success{
			{Name: "the built-in workflow, followed on the websocket", Config: comfyui.Config{Checkpoint: "sd_xl_base_1.0.safetensors", NegativePrompt: "text, watermark"},
				Request: providertest.MaxSeedT2I("beautiful scenery nature glass bottle landscape, purple galaxy bottle", imagegen.Aspect1x1),
				Plan:    builtin, Size: provider.Size{W: 1024, H: 1024}, Calls: followed,
				Check: func(t *testing.T, f *fake) {
					is := is.New(t)
					want := providertest.JSON(t, providertest.Spec(t, "prompt.request.json")).(map[string]any)
					got := f.prompts(t)[0]
					ws := f.Calls()[0]
					is.Equal(got["client_id"], strings.TrimPrefix(ws.query, "clientId=")) // the socket carries this prompt's messages
					want["prompt"].(map[string]any)["3"].(map[string]any)["inputs"].(map[string]any)["seed"] = float64(imagegen.MaxSeed)
					is.Equal(got["prompt"], want["prompt"]) // the documented graph, filled in
				}},
			{Name: "polling the history", Config: polling, Setup: func(_ *testing.T, f *fake) { f.pendingPolls = 2 },
				Plan: imagegen.Plan{Model: "comfyui", Cost: 1, Seeded: true}, Size: provider.Size{W: 1024, H: 1024},
				Calls: []string{promptCall, historyCall, historyCall, historyCall, viewCall},
				Waits: providertest.Waits(time.Second, time.Second, time.Second)},
			{Name: "no websocket on the server: polling", Config: comfyui.Config{Logger: quiet}, Setup: func(_ *testing.T, f *fake) { f.noWebsocket = true },
				Plan: imagegen.Plan{Model: "comfyui", Cost: 1, Seeded: true}, Size: provider.Size{W: 1024, H: 1024},
				Calls: []string{wsCall, promptCall, historyCall, viewCall}, Waits: providertest.Waits(time.Second)},
			{Name: "an operator's workflow", Config: comfyui.Config{Name: "portrait", Workflows: comfyui.Workflows{TextToImage: portrait(t)}},
				Request: providertest.T2I("an old sailor", imagegen.Aspect3x4),
				Plan:    imagegen.Plan{Model: "comfyui/portrait", Cost: 1, Seeded: true}, Size: provider.Size{W: 888, H: 1184}, Calls: followed,
				Check: func(t *testing.T, f *fake) {
					is.New(t).Equal(f.node(t, "6", "text"), "a studio portrait of an old sailor, soft light")
				}},
		},
		ImageToImage: []success{
			{Name: "the reference uploaded, and loaded by the name answered", Config: withCat(comfyui.Config{}),
				Request: providertest.I2I("as a watercolour", imagegen.AspectAuto, catURL),
				Plan:    imagegen.Plan{Model: "comfyui", Cost: 1, Seeded: true}, Size: provider.Size{W: 1248, H: 832}, // the reference's 3:2
				Calls: append([]string{uploadCall}, followed...),
				Check: func(t *testing.T, f *fake) {
					is := is.New(t)
					is.Equal(f.node(t, "10", "image"), "uploaded-imagegen-task-1-1-0.png")
					is.Equal([]any{f.node(t, "11", "width"), f.node(t, "11", "height"), f.node(t, "11", "crop")}, []any{1248.0, 832.0, "center"})
					is.Equal(f.node(t, "12", "pixels"), []any{"11", 0.0})
					is.Equal(f.node(t, "3", "latent_image"), []any{"12", 0.0})
					is.Equal(f.node(t, "3", "denoise"), 0.6)
				}},
		},
		Unplannable: []providertest.Unplannable[comfyui.Config]{
			{Name: "two references", Request: providertest.I2I("x", imagegen.AspectAuto, catURL, catURL),
				Field: "image_input", Message: "must hold 1 URL(s) for model comfyui (got 2)",
				Unplanned: providertest.Outcome{InvalidInput: true, Message: "image_input: must hold 1 URL(s) for model comfyui (got 2)"}},
			{Name: "a workflow for text only", Config: comfyui.Config{Name: "portrait", Workflows: comfyui.Workflows{TextToImage: portrait(t)}},
				Request: providertest.I2I("x", imagegen.AspectAuto, catURL),
				Field:   "scene", Message: "image-to-image is not supported by model comfyui/portrait",
				Unplanned: providertest.Outcome{InvalidInput: true, Message: "scene: image-to-image is not supported by model comfyui/portrait"}},
		},
		AspectRatios: []providertest.Ratios[*fake, comfyui.Config]{{
			Sent: func(t *testing.T, f *fake) string {
				return provider.Size{W: int(f.node(t, "5", "width").(float64)), H: int(f.node(t, "5", "height").(float64))}.String()
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
		NoContentPolicy: "ComfyUI runs the workflow it is given; a safety node, if the operator adds one, answers an image",
		RateLimited: []success{{Name: "a proxy's 429", Plan: imagegen.Plan{Model: "comfyui", Cost: 1, Seeded: true}, Size: provider.Size{W: 1024, H: 1024},
			Answers: []answer{{Status: 429, Header: map[string]string{"Retry-After": "2"}, Body: []byte("Too Many Requests")}}, AnswersTo: promptCall,
			Calls: []string{wsCall, promptCall, promptCall, historyCall, viewCall}, Waits: providertest.Waits(2 * time.Second)}},
		ServerErrors: []success{{Name: "ComfyUI restarting behind its proxy", Plan: imagegen.Plan{Model: "comfyui", Cost: 1, Seeded: true}, Size: provider.Size{W: 1024, H: 1024},
			Setup: func(_ *testing.T, f *fake) {
				f.Queue(promptCall, answer{Status: 502, Body: []byte("<html>502 Bad Gateway</html>")})
				f.Queue(historyCall, answer{Status: 503, Body: []byte("Service Unavailable")})
			},
			Calls: []string{wsCall, promptCall, promptCall, historyCall, historyCall, viewCall}, Waits: []providertest.Wait{providertest.Backoff(0), providertest.Backoff(0)}}},
		Timeouts: []failure{{Name: "the prompt runs past the deadline: interrupted", Setup: func(_ *testing.T, f *fake) { f.stuck = "running" },
			Calls: []string{wsCall, promptCall, queueCall, interruptCall}, Causes: []string{"interrupted"},
			Check: func(t *testing.T, f *fake) { // the interrupt names the prompt, for servers that stop only it
				is := is.New(t)
				var body map[string]any
				is.NoErr(json.Unmarshal(f.Calls()[3].raw, &body))
				is.Equal(body["prompt_id"], f.prompts(t)[0]["prompt_id"])
			}}},
		BadKey: failure{Config: comfyui.Config{Logger: quiet}, Causes: []string{"HTTP 401"}, Calls: []string{wsCall, promptCall}},
		// Given up while queued: taken off ComfyUI's queue.
		GiveUp: &failure{Config: polling, Setup: func(_ *testing.T, f *fake) { f.stuck = "pending" },
			Calls: []string{promptCall, queueCall, dequeueCall}, Causes: []string{"taken off the queue"}},
		Failures: []failure{
			{Name: "a checkpoint the server lacks: node_errors", Config: comfyui.Config{Checkpoint: "missing.safetensors"},
				Want:   providertest.Outcome{Misconfigured: true, Message: provider.MsgMisconfigured},
				Causes: []string{"HTTP 400", "prompt_outputs_failed_validation", "node 4 (CheckpointLoaderSimple): Value not in list: ckpt_name: 'missing.safetensors'"},
				Calls:  []string{wsCall, promptCall}},
			{Name: "node_errors on a taken prompt", Setup: func(_ *testing.T, f *fake) { f.nodeErrors = true },
				Want:   providertest.Outcome{Misconfigured: true, Message: provider.MsgMisconfigured},
				Causes: []string{"node errors", "taken off the queue"}, Calls: []string{wsCall, promptCall, dequeueCall}},
			{Name: "out of memory, told on the websocket", Setup: func(_ *testing.T, f *fake) { f.fail = "execution_error" },
				Want:   providertest.Outcome{Retryable: true, Message: "the image model failed to generate the image, please retry later"},
				Causes: []string{"execution_error in KSampler: torch.OutOfMemoryError"}, Calls: []string{wsCall, promptCall}},
			{Name: "interrupted by someone else, read in the history", Config: polling, Setup: func(_ *testing.T, f *fake) { f.fail = "execution_interrupted" },
				Want:   providertest.Outcome{Retryable: true, Message: "the image model failed to generate the image, please retry later"},
				Causes: []string{"execution_interrupted in KSampler"}, Calls: []string{promptCall, historyCall}, Waits: providertest.Waits(time.Second)},
			{Name: "a workflow that saves nothing", Setup: func(_ *testing.T, f *fake) { f.noOutputs = true },
				Want:   providertest.Outcome{Misconfigured: true, Message: provider.MsgMisconfigured},
				Causes: []string{"saved no image"}, Calls: []string{wsCall, promptCall, historyCall}},
			{Name: "an unreachable reference", Config: withCat(comfyui.Config{}), Request: providertest.I2I("x", imagegen.AspectAuto, "https://img.example/missing.png"),
				Want: providertest.Outcome{InvalidInput: true, Message: "image_input[0] could not be downloaded"}},
		},
		SentSeed: func(t *testing.T, f *fake) *int64 {
			s := int64(f.node(t, "3", "seed").(float64))
			return &s
		},
		SeedAlways: true, // KSampler needs one
	})
}
