package a1111

import (
	"context"
	"encoding/base64"
	"errors"
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
// the first part of its model names ("a1111/sd_xl_base_1.0").
const Provider = "a1111"

// Defaults.
const (
	// DefaultCost: a self-hosted GPU's generation is the cheapest kind.
	DefaultCost = 1
	// DefaultResolution is the side of a square image, for SDXL-class
	// checkpoints; other ratios keep about its area.
	DefaultResolution = 1024
	// DefaultSteps is the sampling steps sent.
	DefaultSteps = 25
	// DefaultDenoisingStrength is how far image-to-image may move from
	// the reference (0 keeps it, 1 ignores it).
	DefaultDenoisingStrength = 0.6
	// DefaultProgressInterval is the wait between two reads of the
	// server's progress (GET /sdapi/v1/progress) while a generation runs.
	DefaultProgressInterval = time.Second
	// DefaultMaxDuration bounds one Generate whose context has no
	// deadline (the service always gives one: its GenerateTimeout);
	// it is provider.DefaultMaxDuration, which every adapter bounded by
	// the context shares.
	DefaultMaxDuration = provider.DefaultMaxDuration
)

var _ imagegen.Model = (*Model)(nil)

// Config configures the adapter. The embedded provider.Config holds the
// HTTP client, the server's base URL (required), the optional
// "user:password" of its --api-auth (APIKey, sent as Basic auth; without
// a colon it is the user name, with an empty password), cost (default
// 1), retries, clock and MaxDuration (default 30 min), which bounds one
// Generate whose context has no deadline, since the default HTTP client
// sets no bound on the answer of its own. The default HTTP client is
// provider.ContextBoundHTTPClient: txt2img answers only when the image
// is done, so the call lasts as long as the context allows (the
// service's GenerateTimeout), with connects bounded to 10 s. An
// injected client's own Timeout cuts the call short of the context: the
// job is then interrupted, as when the context ends, and not sent again.
type Config struct {
	provider.Config
	// Checkpoint is the checkpoint to run (override_settings.
	// sd_model_checkpoint), as the server names it (its title or file
	// name). Empty: the server's current checkpoint.
	Checkpoint string
	// Fetcher downloads reference images. Required for image-to-image;
	// use the guarded fetcher (*fetch.Fetcher).
	Fetcher fetch.ImageFetcher
	// Resolution is the side of a square image (512 for SD 1.5
	// checkpoints). Default 1024.
	Resolution int
	// Steps is the number of sampling steps. Default 25.
	Steps int
	// Sampler is the sampler_name sent; empty leaves the server's.
	Sampler string
	// NegativePrompt is sent with every generation (the API takes none
	// from users).
	NegativePrompt string
	// DenoisingStrength is image-to-image's denoising_strength, above 0
	// and at most 1. Default 0.6.
	DenoisingStrength float64
	// ProgressInterval is the wait between two reads of the server's
	// progress while a generation runs (only when the service follows
	// progress). Default 1 s.
	ProgressInterval time.Duration
	// Logger receives debug lines (an answer whose info names no seed).
	// Default slog.Default().
	Logger *slog.Logger
}

// Model is the adapter for an AUTOMATIC1111-compatible sdapi server
// (AUTOMATIC1111's web UI, Forge, SD.Next). It is safe for concurrent
// use, and safe to print or log: the password stays in the client.
type Model struct {
	client *provider.Client
	cfg    Config // without its provider.Config, which the client holds
}

// New returns the adapter, or an error naming a bad field.
func New(c Config) (*Model, error) {
	client, err := provider.NewClient(&c.Config, provider.Defaults{
		Provider: Provider, Cost: DefaultCost, Classify: classify,
		SelfHosted: "the sdapi server's address, e.g. http://127.0.0.1:7860",
		HTTPClient: provider.ContextBoundHTTPClient,
	})
	if err != nil {
		return nil, err
	}
	if k := client.Key(); !k.IsZero() {
		// The credentials go in base64 (header): a page that echoes the
		// request's headers (a proxy's, a debug page) holds them so,
		// which the key as configured, all the client redacts, is not.
		client.Policy.Redact = provider.Redactor(k, provider.Secret(basicCredentials(k)))
	}
	switch {
	case strings.ContainsAny(c.Checkpoint, "\r\n"):
		return nil, fmt.Errorf("%s: Config.Checkpoint must be one line", Provider)
	case c.Resolution != 0 && (c.Resolution < 256 || c.Resolution > 2048):
		return nil, fmt.Errorf("%s: Config.Resolution must be 256 to 2048 (got %d)", Provider, c.Resolution)
	case c.Steps < 0 || c.Steps > 150:
		return nil, fmt.Errorf("%s: Config.Steps must be 1 to 150 (got %d)", Provider, c.Steps)
	case c.DenoisingStrength < 0 || c.DenoisingStrength > 1:
		return nil, fmt.Errorf("%s: Config.DenoisingStrength must be above 0 and at most 1 (got %v)", Provider, c.DenoisingStrength)
	case c.ProgressInterval < 0:
		return nil, fmt.Errorf("%s: Config.ProgressInterval must not be negative (got %v)", Provider, c.ProgressInterval)
	}
	c.Resolution = cmpOr(c.Resolution, DefaultResolution)
	c.Steps = cmpOr(c.Steps, DefaultSteps)
	c.DenoisingStrength = cmpOr(c.DenoisingStrength, DefaultDenoisingStrength)
	c.ProgressInterval = cmpOr(c.ProgressInterval, DefaultProgressInterval)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return &Model{client: client, cfg: c}, nil
}

func cmpOr[T int | float64 | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// Name is the model name recorded on tasks: "a1111", or
// "a1111/<checkpoint>".
func (m *Model) Name() string {
	if m.cfg.Checkpoint == "" {
		return Provider
	}
	return Provider + "/" + m.cfg.Checkpoint
}

// Plan accepts every ratio, at the configured cost, with the seed
// honoured; image-to-image takes one reference image.
func (m *Model) Plan(req imagegen.Request) (imagegen.Plan, error) {
	if req.Scene == imagegen.SceneImageToImage && len(req.ImageInput) > 1 {
		return imagegen.Plan{}, &imagegen.ValidationError{Field: "image_input", Message: fmt.Sprintf("must hold one URL for model %s (got %d)", m.Name(), len(req.ImageInput))}
	}
	return imagegen.Plan{Model: m.Name(), Cost: m.client.Cost, Seeded: true}, nil
}

// Generate runs txt2img, or img2img from the reference, while it
// follows the server's progress (when g.Progress is set); when ctx ends
// first (or Config.MaxDuration passes, for a ctx without a deadline), or
// the HTTP client gives up on the answer of its own, it interrupts the
// server's job if that job is this one, and does not send it again. The
// image is centre-cropped to the exact ratio if the server answered
// another size. Failures are *imagegen.ModelError.
func (m *Model) Generate(ctx context.Context, g imagegen.Generation) ([]imagegen.GeneratedImage, error) {
	ctx, cancel := m.client.Bound(ctx)
	defer cancel()
	req := g.Request
	refs, err := provider.PlanAndFetch(ctx, Provider, m, req, m.cfg.Fetcher, provider.PNG, provider.JPEG, provider.WebP)
	if err != nil {
		return nil, err
	}
	body, path := m.body(req, refs, taskID(g))
	stop := m.followProgress(ctx, g, body.ForceTaskID)
	resp, err := m.generate(ctx, path, body)
	stop()
	if err != nil {
		// Cut off by our side (the context, or the HTTP client's own
		// timeout after the call was sent: provider.Do sends it no
		// more), the job may run on: interrupt it if it is ours.
		if ctx.Err() != nil || errors.Is(err, provider.ErrMaybeAccepted) {
			return nil, m.abandon(ctx, body.ForceTaskID, err)
		}
		return nil, err
	}
	imgs, err := m.images(resp)
	if err != nil {
		return nil, err
	}
	return provider.CropAll(Provider, imgs, provider.TargetRatio(req, refs, nil))
}

// taskID is the id the server's job runs under (force_task_id), so that
// the adapter can tell whether the running job is this generation's:
// the task and its attempt.
func taskID(g imagegen.Generation) string {
	return fmt.Sprintf("imagegen-%s-%d", g.TaskID, g.Attempt)
}

// header is what every call sends: Basic auth when a user:password is
// configured.
func (m *Model) header() http.Header {
	h := http.Header{}
	if k := m.client.Key(); !k.IsZero() {
		h.Set("Authorization", "Basic "+basicCredentials(k))
	}
	return h
}

// basicCredentials is the credentials of Basic auth for k, "user:password".
func basicCredentials(k provider.Secret) string {
	return base64.StdEncoding.EncodeToString([]byte(k.Reveal()))
}
