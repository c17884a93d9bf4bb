package bfl

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/fetch"
	"github.com/imagegen/imagegen/model/provider"
)

// Provider names this adapter in errors (ModelError.Provider) and is
// the first part of its model names ("bfl/flux-pro-1.1").
const Provider = "bfl"

// Defaults.
const (
	// DefaultBaseURL is the API's global endpoint (it routes each task to
	// a region and answers that region's polling_url).
	DefaultBaseURL = "https://api.bfl.ai"
	// DefaultModel is the model of "-model bfl".
	DefaultModel = ModelFluxPro11
	// DefaultPollInterval is the wait between two reads of a task's
	// result, as Black Forest Labs' own examples poll.
	DefaultPollInterval = 500 * time.Millisecond
)

// The models this adapter knows.
const (
	ModelFluxPro11      = "flux-pro-1.1"
	ModelFluxPro11Ultra = "flux-pro-1.1-ultra"
	ModelFluxDev        = "flux-dev"
	ModelFluxKontextPro = "flux-kontext-pro"
)

// spec is what the adapter knows of one model.
type spec struct {
	cost int64 // credits, by the model's list price
	// sized: the model takes width and height (multiples of 32);
	// otherwise aspect_ratio.
	sized bool
	// references: the most reference images the model takes (0: it does
	// text-to-image only).
	references int
}

// modelSpec returns the spec of a model the adapter knows.
func modelSpec(name string) (spec, bool) {
	switch name {
	case ModelFluxPro11: // $0.04 an image
		return spec{cost: 2, sized: true}, true
	case ModelFluxDev: // $0.025
		return spec{cost: 1, sized: true}, true
	case ModelFluxPro11Ultra: // $0.06, about 4 megapixels
		return spec{cost: 3}, true
	case ModelFluxKontextPro: // $0.04, text-to-image and editing
		return spec{cost: 2, references: 1}, true
	}
	return spec{}, false
}

// Models lists the model names the adapter takes, for help texts.
func Models() []string {
	return []string{ModelFluxPro11, ModelFluxPro11Ultra, ModelFluxDev, ModelFluxKontextPro}
}

var _ imagegen.Model = (*Model)(nil)

// Config configures the adapter. The embedded provider.Config holds the
// HTTP client, base URL, API key (sent as x-key), cost (default: the
// model's), retries and clock.
type Config struct {
	provider.Config
	// Model is one of Models(). Default flux-pro-1.1.
	Model string
	// Fetcher downloads reference images and the result (result.sample
	// is a signed URL). Required; use the guarded fetcher
	// (*fetch.Fetcher).
	Fetcher fetch.ImageFetcher
	// PollInterval is the wait between two reads of a pending task.
	// Default 500 ms.
	PollInterval time.Duration
}

// Model is the Black Forest Labs adapter. It is safe for concurrent use,
// and safe to print or log: the key stays in the client.
type Model struct {
	client *provider.Client
	cfg    Config // without its provider.Config, which the client holds
	spec   spec
	base   *url.URL
}

// New returns the adapter, or an error naming a bad field.
func New(c Config) (*Model, error) {
	c.Model = cmp.Or(c.Model, DefaultModel)
	sp, ok := modelSpec(c.Model)
	if !ok {
		return nil, fmt.Errorf("%s: Config.Model %q is not one of %v", Provider, c.Model, Models())
	}
	client, err := provider.NewClient(&c.Config, provider.Defaults{
		Provider: Provider, BaseURL: DefaultBaseURL, Cost: sp.cost, Classify: classify,
	})
	if err != nil {
		return nil, err
	}
	if c.Fetcher == nil {
		return nil, fmt.Errorf("%s: Config.Fetcher is required (results are URLs to download)", Provider)
	}
	switch {
	case c.PollInterval == 0:
		c.PollInterval = DefaultPollInterval
	case c.PollInterval < 0:
		return nil, fmt.Errorf("%s: Config.PollInterval must not be negative (got %v)", Provider, c.PollInterval)
	}
	base, err := url.Parse(client.BaseURL)
	if err != nil {
		return nil, fmt.Errorf("%s: Config.BaseURL: %w", Provider, err)
	}
	return &Model{client: client, cfg: c, spec: sp, base: base}, nil
}

// Name is the model name recorded on tasks, e.g. "bfl/flux-pro-1.1".
func (m *Model) Name() string { return Provider + "/" + m.cfg.Model }

// Plan accepts every ratio, at the configured cost, with the seed
// honoured. It refuses (*imagegen.ValidationError) image-to-image on a
// model that takes no reference, and more references than the model
// takes.
func (m *Model) Plan(req imagegen.Request) (imagegen.Plan, error) {
	if req.Scene == imagegen.SceneImageToImage {
		if m.spec.references == 0 {
			return imagegen.Plan{}, &imagegen.ValidationError{Field: "scene", Message: fmt.Sprintf("image-to-image is not supported by model %s (use %s)", m.cfg.Model, ModelFluxKontextPro)}
		}
		if n := len(req.ImageInput); n > m.spec.references {
			return imagegen.Plan{}, &imagegen.ValidationError{Field: "image_input", Message: fmt.Sprintf("must hold one URL for model %s (got %d)", m.cfg.Model, n)}
		}
	}
	return imagegen.Plan{Model: m.Name(), Cost: m.client.Cost, Seeded: true}, nil
}

// Generate submits the task, polls its result until it is Ready (or
// refused, or failed), downloads result.sample through the Fetcher and
// centre-crops it to the exact ratio; result.seed comes back as the
// image's Seed. Failures are *imagegen.ModelError.
func (m *Model) Generate(ctx context.Context, g imagegen.Generation) ([]imagegen.GeneratedImage, error) {
	ctx, cancel := m.client.Bound(ctx) // Config.MaxDuration, for a ctx without a deadline
	defer cancel()
	req := g.Request
	refs, err := provider.PlanAndFetch(ctx, Provider, m, req, m.cfg.Fetcher, provider.PNG, provider.JPEG, provider.WebP)
	if err != nil {
		return nil, err
	}
	task, err := m.submit(ctx, m.input(req, refs))
	if err != nil {
		return nil, err
	}
	res, err := m.await(ctx, task, g)
	if err != nil {
		return nil, err
	}
	img, err := provider.DownloadResult(ctx, Provider, m.cfg.Fetcher, res.Result.Sample)
	if err != nil {
		return nil, err
	}
	img.Seed = res.Result.Seed // the seed used, which the service records when it is not the task's
	return provider.CropAll(Provider, []imagegen.GeneratedImage{img}, provider.AnswerRatio(req, refs))
}

// header is what every API call sends besides its body.
func (m *Model) header() http.Header {
	h := http.Header{}
	h.Set("x-key", m.client.Key().Reveal())
	return h
}
