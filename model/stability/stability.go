package stability

import (
	"cmp"
	"context"
	"fmt"
	"net/http"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/fetch"
	"github.com/imagegen/imagegen/model/provider"
)

// Provider names this adapter in errors (ModelError.Provider).
const Provider = "stability"

// Defaults.
const (
	DefaultBaseURL  = "https://api.stability.ai"
	DefaultModel    = "core"
	DefaultCost     = 2 // of core; see the package doc for the other models
	DefaultStrength = 0.5
)

var _ imagegen.Model = (*Model)(nil)

// Config configures the adapter. The embedded provider.Config holds the
// HTTP client, base URL, API key, cost (default: the model's, 2 for
// core), retries, clock and MaxDuration (default 30 min, for a context
// without a deadline). The default HTTP client is
// provider.ContextBoundHTTPClient: the generate call answers when the
// image is done, and the context bounds it (doc.go's Timeouts).
type Config struct {
	provider.Config
	// Model chooses the service: "core" (default, text-to-image only),
	// "ultra", or an SD3 model for /generate/sd3 ("sd3.5-large",
	// "sd3.5-large-turbo", "sd3.5-medium", "sd3.5-flash", and the legacy
	// "sd3-large", "sd3-large-turbo", "sd3-medium").
	Model string
	// Strength is sent with the init image (image-to-image): 0 keeps the
	// reference as it is, 1 ignores it. Default 0.5; must be in (0, 1].
	Strength float64
	// StylePreset is sent as style_preset when set (core and SD3 only),
	// one of the API's presets such as "photographic" or "anime".
	StylePreset string
	// Fetcher downloads reference images (image-to-image); use the
	// guarded fetcher (*fetch.Fetcher). Without one, Plan refuses
	// image-to-image.
	Fetcher fetch.ImageFetcher
}

// Model is the Stability AI Stable Image adapter. It is safe for
// concurrent use, and safe to print or log: the key stays in the client.
type Model struct {
	client  *provider.Client
	cfg     Config // without its provider.Config, which the client holds
	service service
}

// New returns the adapter, or an error naming a bad field.
func New(c Config) (*Model, error) {
	c.Model = cmp.Or(c.Model, DefaultModel)
	svc, ok := serviceOf(c.Model)
	if !ok {
		return nil, fmt.Errorf("%s: Config.Model %q is not supported (one of %s)", Provider, c.Model, models())
	}
	client, err := provider.NewClient(&c.Config, provider.Defaults{
		Provider: Provider, BaseURL: DefaultBaseURL, Cost: svc.cost,
		Classify: classify, RetryDelay: retryDelay,

		// The generation call answers when the image is done: the
		// context bounds it (see provider's Timeouts).
		HTTPClient: provider.ContextBoundHTTPClient,
	})
	if err != nil {
		return nil, err
	}
	c.Strength = cmp.Or(c.Strength, DefaultStrength)
	if !(c.Strength > 0 && c.Strength <= 1) {
		return nil, fmt.Errorf("%s: Config.Strength must be more than 0 and at most 1 (got %v)", Provider, c.Strength)
	}
	if c.StylePreset != "" {
		if err := checkStylePreset(c.StylePreset, svc); err != nil {
			return nil, fmt.Errorf("%s: Config.StylePreset %w", Provider, err)
		}
	}
	return &Model{client: client, cfg: c, service: svc}, nil
}

// Name is the model name recorded on tasks, e.g. "stability/core".
func (m *Model) Name() string { return Provider + "/" + m.cfg.Model }

// Plan accepts every ratio, at the configured cost. It refuses (with
// *imagegen.ValidationError) image-to-image on core or without a
// Fetcher, and more than one reference image (the API takes one).
func (m *Model) Plan(req imagegen.Request) (imagegen.Plan, error) {
	if req.Scene == imagegen.SceneImageToImage {
		switch {
		case !m.service.image:
			return imagegen.Plan{}, &imagegen.ValidationError{Field: "scene", Message: fmt.Sprintf("image-to-image is not supported by model %s", m.cfg.Model)}
		case m.cfg.Fetcher == nil:
			return imagegen.Plan{}, &imagegen.ValidationError{Field: "scene", Message: "image-to-image is not available on this server"}
		case len(req.ImageInput) > 1:
			return imagegen.Plan{}, &imagegen.ValidationError{Field: "image_input", Message: fmt.Sprintf("model %s takes one reference image", m.Name())}
		}
	}
	return imagegen.Plan{Model: m.Name(), Cost: m.client.Cost, Seeded: true}, nil
}

// Generate makes one image for g: the form of the model's endpoint, with
// the reference as init image for image-to-image, answered as JSON, then
// centre-cropped to the exact ratio. Failures are *imagegen.ModelError,
// including CONTENT_FILTERED answers (HTTP 200), which are refusals.
func (m *Model) Generate(ctx context.Context, g imagegen.Generation) ([]imagegen.GeneratedImage, error) {
	ctx, cancel := m.client.Bound(ctx) // Config.MaxDuration, for a ctx without a deadline
	defer cancel()
	req := g.Request
	var refs []provider.Reference
	var ref *provider.Reference
	if req.Scene == imagegen.SceneImageToImage {
		if !m.service.image || len(req.ImageInput) != 1 {
			return nil, &imagegen.ModelError{Provider: Provider, Message: provider.MsgRejected,
				Err: fmt.Errorf("model %s cannot run image-to-image with %d references (not planned here?)", m.cfg.Model, len(req.ImageInput))}
		}
		var err error
		refs, err = provider.FetchReferences(ctx, Provider, m.cfg.Fetcher, req.ImageInput, provider.PNG, provider.JPEG, provider.WebP)
		if err != nil {
			return nil, err
		}
		if err := checkReference(refs[0]); err != nil {
			return nil, err
		}
		ref = &refs[0]
	}
	ratio := provider.AnswerRatio(req, refs)
	build, err := provider.PostForm(m.client.URL(m.service.path), m.fields(req.Prompt, req.Seed, ratio, ref), files(ref), m.header())
	if err != nil {
		return nil, &imagegen.ModelError{Provider: Provider, Message: provider.MsgMisconfigured, Err: err}
	}
	resp, err := m.client.Do(ctx, build)
	if err != nil {
		return nil, err
	}
	img, err := answerImage(resp)
	if err != nil {
		return nil, err
	}
	return provider.CropAll(Provider, []imagegen.GeneratedImage{img}, ratio)
}

// header is what every call sends besides its body: Bearer auth, and
// accept: application/json (the answer then carries finish_reason in its
// body, as the documented examples do).
func (m *Model) header() http.Header {
	h := http.Header{}
	h.Set("Authorization", "Bearer "+m.client.Key().Reveal())
	h.Set("Accept", "application/json")
	return h
}
