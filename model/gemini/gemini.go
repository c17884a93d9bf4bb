package gemini

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/fetch"
	"github.com/imagegen/imagegen/model/provider"
)

// Provider names this adapter in errors (ModelError.Provider).
const Provider = "gemini"

// Defaults.
const (
	DefaultBaseURL = "https://generativelanguage.googleapis.com/v1beta"
	DefaultModel   = "gemini-2.5-flash-image"
	DefaultCost    = 1
)

var _ imagegen.Model = (*Model)(nil)

// Config configures the adapter. The embedded provider.Config holds the
// HTTP client, base URL, API key, cost (default 1), retries and clock,
// and MaxDuration (default 30 min, for a context without a deadline).
// The default HTTP client is provider.ContextBoundHTTPClient: the
// generation call answers when the image is done, and the context
// bounds it (doc.go's Timeouts).
type Config struct {
	provider.Config
	// Model is the Gemini image model id, such as
	// "gemini-2.5-flash-image" (default) or "gemini-3-pro-image-preview".
	Model string
	// ImageSize is sent as imageConfig.imageSize when set: "1K", "2K" or
	// "4K" (models that support it). Default: the model's (1K).
	ImageSize string
	// Fetcher downloads reference images (image-to-image); use the
	// guarded fetcher (*fetch.Fetcher). Without one, Plan refuses
	// image-to-image.
	Fetcher fetch.ImageFetcher
}

// Model is the Gemini generateContent adapter. It is safe for concurrent
// use, and safe to print or log: the key stays in the client.
type Model struct {
	client *provider.Client
	cfg    Config // without its provider.Config, which the client holds
}

// New returns the adapter, or an error naming a bad field.
func New(c Config) (*Model, error) {
	client, err := provider.NewClient(&c.Config, provider.Defaults{
		Provider: Provider, BaseURL: DefaultBaseURL, Cost: DefaultCost,
		Classify: classify, RetryDelay: retryDelay,

		// The generation call answers when the image is done: the
		// context bounds it (see provider's Timeouts).
		HTTPClient: provider.ContextBoundHTTPClient,
	})
	if err != nil {
		return nil, err
	}
	c.Model = cmp.Or(c.Model, DefaultModel)
	if c.Model != url.PathEscape(c.Model) {
		return nil, fmt.Errorf("%s: Config.Model %q is not a model id", Provider, c.Model)
	}
	if c.ImageSize != "" && !slices.Contains([]string{"1K", "2K", "4K"}, c.ImageSize) {
		return nil, fmt.Errorf("%s: Config.ImageSize must be 1K, 2K or 4K (got %q)", Provider, c.ImageSize)
	}
	return &Model{client: client, cfg: c}, nil
}

// Name is the model name recorded on tasks, e.g.
// "gemini/gemini-2.5-flash-image".
func (m *Model) Name() string { return Provider + "/" + m.cfg.Model }

// Plan accepts every ratio and both scenes, at the configured cost; it
// refuses image-to-image (*imagegen.ValidationError on "scene") when no
// Fetcher is configured.
func (m *Model) Plan(req imagegen.Request) (imagegen.Plan, error) {
	if req.Scene == imagegen.SceneImageToImage && m.cfg.Fetcher == nil {
		return imagegen.Plan{}, &imagegen.ValidationError{Field: "scene", Message: "image-to-image is not available on this server"}
	}
	return imagegen.Plan{Model: m.Name(), Cost: m.client.Cost}, nil
}

// Generate asks generateContent for an image, with the reference images
// inline, and centre-crops the answer to the exact ratio. Failures are
// *imagegen.ModelError, including the ones Gemini answers with HTTP 200
// (a blocked prompt, a finish reason without an image, text only).
func (m *Model) Generate(ctx context.Context, g imagegen.Generation) ([]imagegen.GeneratedImage, error) {
	ctx, cancel := m.client.Bound(ctx) // Config.MaxDuration, for a ctx without a deadline
	defer cancel()
	req := g.Request
	var refs []provider.Reference
	if req.Scene == imagegen.SceneImageToImage {
		var err error
		refs, err = provider.FetchReferences(ctx, Provider, m.cfg.Fetcher, req.ImageInput, provider.PNG, provider.JPEG, provider.WebP, provider.HEIC, provider.HEIF)
		if err != nil {
			return nil, err
		}
		if err := checkInline(refs); err != nil {
			return nil, err
		}
	}
	body := m.request(req, refs)
	header := http.Header{}
	header.Set("x-goog-api-key", m.client.Key().Reveal())
	build, err := provider.PostJSON(m.client.URL("/models/"+m.cfg.Model+":generateContent"), body, header)
	if err != nil {
		return nil, &imagegen.ModelError{Provider: Provider, Message: provider.MsgMisconfigured, Err: err}
	}
	resp, err := m.client.Do(ctx, build)
	if err != nil {
		return nil, err
	}
	imgs, err := images(resp)
	if err != nil {
		return nil, err
	}
	return provider.CropAll(Provider, imgs, provider.AnswerRatio(req, refs))
}
