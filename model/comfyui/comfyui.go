package comfyui

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/fetch"
	"github.com/imagegen/imagegen/model/provider"
)

// Provider names this adapter in errors (ModelError.Provider) and is
// the first part of its model names ("comfyui/sd_xl_base_1.0.safetensors").
const Provider = "comfyui"

// Defaults.
const (
	// DefaultCheckpoint is the checkpoint of the built-in workflows when
	// the model names none: the file name of SDXL's base model, as
	// ComfyUI's own examples load it.
	DefaultCheckpoint = "sd_xl_base_1.0.safetensors"
	// DefaultCost: a self-hosted GPU's generation is the cheapest kind.
	DefaultCost = 1
	// DefaultResolution is the side of a square latent of the built-in
	// workflows; other ratios keep about its area.
	DefaultResolution = 1024
	// DefaultPollInterval is the wait between two reads of
	// /history/{prompt_id} when the websocket cannot be used.
	DefaultPollInterval = time.Second
	// DefaultHistoryCheck is how often the history of a prompt followed
	// on the websocket is read as well.
	DefaultHistoryCheck = 30 * time.Second
	// DefaultDialTimeout bounds the websocket's handshake.
	DefaultDialTimeout = 10 * time.Second
)

var _ imagegen.Model = (*Model)(nil)

// Config configures the adapter. The embedded provider.Config holds the
// HTTP client, the server's base URL (required), an optional key sent as
// "Authorization: Bearer" (for an authenticating proxy in front of
// ComfyUI), cost (default 1), retries and clock.
type Config struct {
	provider.Config
	// Name is the model id: the part of the model name after
	// "comfyui/". Default: the checkpoint, or none when Workflows are
	// set and Checkpoint is not.
	Name string
	// Checkpoint is the ckpt_name of the built-in workflows (and of a
	// workflow's {{checkpoint}}). Default DefaultCheckpoint.
	Checkpoint string
	// Workflows, when set, replace the built-in workflows (see
	// Workflows and the package doc's placeholders).
	Workflows Workflows
	// Fetcher downloads reference images. Required for image-to-image;
	// use the guarded fetcher (*fetch.Fetcher).
	Fetcher fetch.ImageFetcher
	// Resolution is the side of a square latent (512 for SD 1.5).
	// Default 1024.
	Resolution int
	// NegativePrompt is the built-in workflows' negative prompt (and a
	// workflow's {{negative_prompt}}).
	NegativePrompt string
	// PollInterval is the wait between two reads of the history when
	// the websocket is not available. Default 1 s.
	PollInterval time.Duration
	// NoWebsocket follows every prompt by polling its history only.
	NoWebsocket bool
	// HistoryCheck is how often, while a prompt is followed on the
	// websocket, its history is read too, in case the socket missed its
	// end (a connection that died without closing). Default 30 s, in real
	// time.
	HistoryCheck time.Duration
	// DialTimeout bounds the websocket's handshake, in real time: a
	// server or proxy that holds /ws unanswered is one without a
	// websocket, and the prompt is followed by polling. Default 10 s.
	DialTimeout time.Duration
	// Logger receives warnings (a websocket that failed, a cancel that
	// failed). Default slog.Default().
	Logger *slog.Logger
}

// Model is the ComfyUI adapter. It is safe for concurrent use, and safe
// to print or log: the key stays in the client.
type Model struct {
	client *provider.Client
	cfg    Config // without its provider.Config, which the client holds
	t2i    *workflow
	i2i    *workflow
}

// New returns the adapter, or an error naming a bad field (a workflow
// file that is not an API-format workflow, or lacks its placeholders).
func New(c Config) (*Model, error) {
	client, err := provider.NewClient(&c.Config, provider.Defaults{
		Provider: Provider, Cost: DefaultCost, Classify: classify,
		SelfHosted: "the ComfyUI server's address, e.g. http://127.0.0.1:8188",
	})
	if err != nil {
		return nil, err
	}
	switch {
	case c.Resolution != 0 && (c.Resolution < 256 || c.Resolution > 4096):
		return nil, fmt.Errorf("%s: Config.Resolution must be 256 to 4096 (got %d)", Provider, c.Resolution)
	case c.PollInterval < 0 || c.HistoryCheck < 0 || c.DialTimeout < 0:
		return nil, fmt.Errorf("%s: Config.PollInterval, Config.HistoryCheck and Config.DialTimeout must not be negative", Provider)
	case strings.ContainsAny(c.Name+c.Checkpoint, "\r\n"):
		return nil, fmt.Errorf("%s: Config.Name and Config.Checkpoint must be one line", Provider)
	}
	custom := c.Workflows.TextToImage != nil || c.Workflows.ImageToImage != nil
	if !custom || c.Checkpoint != "" {
		c.Name = cmp.Or(c.Name, c.Checkpoint)
	}
	c.Checkpoint = cmp.Or(c.Checkpoint, DefaultCheckpoint)
	c.Resolution = cmp.Or(c.Resolution, DefaultResolution)
	c.PollInterval = cmp.Or(c.PollInterval, DefaultPollInterval)
	c.HistoryCheck = cmp.Or(c.HistoryCheck, DefaultHistoryCheck)
	c.DialTimeout = cmp.Or(c.DialTimeout, DefaultDialTimeout)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	m := &Model{client: client, cfg: c}
	t2i, i2i := c.Workflows.TextToImage, c.Workflows.ImageToImage
	if !custom {
		t2i, i2i = textToImageJSON, imageToImageJSON
	}
	if t2i != nil {
		if m.t2i, err = parseWorkflow(t2i, false); err != nil {
			return nil, fmt.Errorf("%s: Config.Workflows.TextToImage: %w", Provider, err)
		}
	}
	if i2i != nil {
		if m.i2i, err = parseWorkflow(i2i, true); err != nil {
			return nil, fmt.Errorf("%s: Config.Workflows.ImageToImage: %w", Provider, err)
		}
	}
	return m, nil
}

// Name is the model name recorded on tasks: "comfyui", or
// "comfyui/<name>".
func (m *Model) Name() string {
	if m.cfg.Name == "" {
		return Provider
	}
	return Provider + "/" + m.cfg.Name
}

// workflowFor is the workflow of the request's scene, nil when none.
func (m *Model) workflowFor(req imagegen.Request) *workflow {
	if req.Scene == imagegen.SceneImageToImage {
		return m.i2i
	}
	return m.t2i
}

// Plan accepts every ratio at the configured cost. It refuses
// (*imagegen.ValidationError) a scene without a workflow, and more
// references than the workflow takes. Plan.Seeded says whether the
// workflow takes the seed (the built-in ones do).
func (m *Model) Plan(req imagegen.Request) (imagegen.Plan, error) {
	w := m.workflowFor(req)
	switch {
	case w == nil:
		return imagegen.Plan{}, &imagegen.ValidationError{Field: "scene", Message: fmt.Sprintf("%s is not supported by model %s", req.Scene, m.Name())}
	case req.Scene == imagegen.SceneImageToImage && len(req.ImageInput) != w.images:
		return imagegen.Plan{}, &imagegen.ValidationError{Field: "image_input", Message: fmt.Sprintf("must hold %d URL(s) for model %s (got %d)", w.images, m.Name(), len(req.ImageInput))}
	}
	return imagegen.Plan{Model: m.Name(), Cost: m.client.Cost, Seeded: w.seeded}, nil
}

// Generate uploads the references, queues the workflow filled in for
// the request, follows it on the websocket (or by polling its history)
// to its end, and downloads its first image; when ctx ends first it
// takes the prompt off the queue, or interrupts it when it runs. The
// image is centre-cropped to the exact ratio if it is not of it.
// Failures are *imagegen.ModelError.
func (m *Model) Generate(ctx context.Context, g imagegen.Generation) ([]imagegen.GeneratedImage, error) {
	ctx, cancel := m.client.Bound(ctx) // Config.MaxDuration, for a ctx without a deadline
	defer cancel()
	req := g.Request
	refs, err := provider.PlanAndFetch(ctx, Provider, m, req, m.cfg.Fetcher, provider.PNG, provider.JPEG, provider.WebP)
	if err != nil {
		return nil, err
	}
	names, err := m.upload(ctx, g, refs)
	if err != nil {
		return nil, err
	}
	ratio := provider.TargetRatio(req, refs, nil)
	size := provider.ExactSize(ratio, m.cfg.Resolution, 8)
	prompt, err := m.workflowFor(req).fill(values{
		prompt: req.Prompt, negative: m.cfg.NegativePrompt, checkpoint: m.cfg.Checkpoint,
		width: size.W, height: size.H, seed: req.Seed, images: names,
	})
	if err != nil {
		return nil, &imagegen.ModelError{Provider: Provider, Misconfigured: true, Message: provider.MsgMisconfigured, Err: err}
	}
	img, err := m.run(ctx, g, prompt)
	if err != nil {
		return nil, err
	}
	return provider.CropAll(Provider, []imagegen.GeneratedImage{img}, ratio)
}

// header is what every call sends: the Bearer token when one is set.
func (m *Model) header() http.Header {
	h := http.Header{}
	if k := m.client.Key().Reveal(); k != "" {
		h.Set("Authorization", "Bearer "+k)
	}
	return h
}
