package fal

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/fetch"
	"github.com/imagegen/imagegen/model/provider"
)

// Provider names this adapter in errors (ModelError.Provider).
const Provider = "fal"

// Defaults.
const (
	DefaultBaseURL      = "https://queue.fal.run"
	DefaultModel        = "fal-ai/flux/dev"
	DefaultCost         = 1
	DefaultPollInterval = time.Second
	DefaultOutputFormat = "jpeg"
)

var _ imagegen.Model = (*Model)(nil)

// Config configures the adapter. The embedded provider.Config holds the
// HTTP client, base URL (the queue host), API key, cost (default 1),
// retries and clock.
type Config struct {
	provider.Config
	// Model is the endpoint id, owner/app[/path]: "fal-ai/flux/dev"
	// (default) or another endpoint that takes flux/dev's input
	// (prompt, image_size, num_images, enable_safety_checker,
	// output_format), such as "fal-ai/flux/schnell".
	Model string
	// OutputFormat is sent as output_format: "jpeg" (default) or "png".
	OutputFormat string
	// PollInterval is the wait between two status polls, on the clock.
	// Default 1 s.
	PollInterval time.Duration
	// Fetcher downloads the results from fal's CDN (https://*.fal.media);
	// use the guarded fetcher (*fetch.Fetcher). Required.
	Fetcher fetch.ImageFetcher
	// Logger receives the queue's progress (debug) and the outcome of
	// cancels. Default slog.Default(). The key is never logged.
	Logger *slog.Logger
}

// Model is the fal.ai queue adapter. It is safe for concurrent use, and
// safe to print or log: the key stays in the client.
type Model struct {
	client *provider.Client
	cfg    Config // without its provider.Config, which the client holds
	app    string // namespace/owner/app, for status, result and cancel
	log    *slog.Logger
}

// New returns the adapter, or an error naming a bad field.
func New(c Config) (*Model, error) {
	client, err := provider.NewClient(&c.Config, provider.Defaults{
		Provider: Provider, BaseURL: DefaultBaseURL, Cost: DefaultCost,
		Classify: classify,
	})
	if err != nil {
		return nil, err
	}
	c.Model = cmp.Or(c.Model, DefaultModel)
	c.OutputFormat = cmp.Or(c.OutputFormat, DefaultOutputFormat)
	c.PollInterval = cmp.Or(c.PollInterval, DefaultPollInterval)
	app, err := appOf(c.Model)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Provider, err)
	}
	switch {
	case c.OutputFormat != "jpeg" && c.OutputFormat != "png":
		return nil, fmt.Errorf("%s: Config.OutputFormat must be jpeg or png (got %q)", Provider, c.OutputFormat)
	case c.PollInterval < 0:
		return nil, fmt.Errorf("%s: Config.PollInterval must not be negative (got %v)", Provider, c.PollInterval)
	case c.Fetcher == nil:
		return nil, fmt.Errorf("%s: Config.Fetcher is required: results are downloaded from fal's CDN", Provider)
	}
	log := c.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Model{client: client, cfg: c, app: app, log: log}, nil
}

// Name is the model name recorded on tasks, e.g. "fal/fal-ai/flux/dev".
func (m *Model) Name() string { return Provider + "/" + m.cfg.Model }

// Plan accepts text-to-image in every ratio, at the configured cost. It
// refuses image-to-image (*imagegen.ValidationError on "scene"): the
// documented input of flux/dev takes no reference image.
func (m *Model) Plan(req imagegen.Request) (imagegen.Plan, error) {
	if req.Scene == imagegen.SceneImageToImage {
		return imagegen.Plan{}, &imagegen.ValidationError{Field: "scene", Message: fmt.Sprintf("image-to-image is not supported by model %s", m.cfg.Model)}
	}
	return imagegen.Plan{Model: m.Name(), Cost: m.client.Cost, Seeded: true}, nil
}

// Generate submits the prompt to fal's queue, polls the request until it
// completes (cancelling it if our context ends first), fetches the
// result and downloads its image, centre-cropped to the exact ratio if
// it is only near. Failures are *imagegen.ModelError.
func (m *Model) Generate(ctx context.Context, g imagegen.Generation) ([]imagegen.GeneratedImage, error) {
	ctx, cancel := m.client.Bound(ctx) // Config.MaxDuration, for a ctx without a deadline
	defer cancel()
	req := g.Request
	if req.Scene == imagegen.SceneImageToImage {
		return nil, &imagegen.ModelError{Provider: Provider, Message: "image-to-image is not supported by this model",
			Err: fmt.Errorf("model %s takes no reference image", m.cfg.Model)}
	}
	ratio := provider.TargetRatio(req, nil, nil)
	j, err := m.submit(ctx, input{
		Prompt:              req.Prompt,
		ImageSize:           sizeFor(ratio),
		NumImages:           1,
		EnableSafetyChecker: true,
		OutputFormat:        m.cfg.OutputFormat,
		Seed:                req.Seed,
	})
	if err != nil {
		return nil, err
	}
	resp, err := m.await(ctx, j)
	if err != nil {
		return nil, err
	}
	return m.images(ctx, resp, ratio)
}
