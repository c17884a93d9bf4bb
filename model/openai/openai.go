package openai

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/fetch"
	"github.com/imagegen/imagegen/model/provider"
)

// Provider names this adapter in errors (ModelError.Provider).
const Provider = "openai"

// Defaults.
const (
	DefaultBaseURL = "https://api.openai.com/v1"
	DefaultModel   = "gpt-image-1"
	DefaultCost    = 2
)

var _ imagegen.Model = (*Model)(nil)

// Config configures the adapter. The embedded provider.Config holds the
// HTTP client, base URL, API key, cost (default 2), retries and clock,
// and MaxDuration (default 30 min, for a context without a deadline).
// The default HTTP client is provider.ContextBoundHTTPClient: the
// generation call answers when the image is done, and the context
// bounds it (doc.go's Timeouts).
type Config struct {
	provider.Config
	// Model is the OpenAI model: "gpt-image-1" (default), another GPT
	// image model ("gpt-image-1-mini", "gpt-image-1.5", ...), or
	// "dall-e-3" (text-to-image only).
	Model string
	// Quality is sent as is when set: low, medium, high or auto for the
	// GPT image models, standard or hd for dall-e-3. Default: the API's.
	Quality string
	// ExactRatiosOnly makes Plan refuse a ratio the model has no exact
	// size for, instead of generating the nearest size and centre-cropping.
	ExactRatiosOnly bool
	// Fetcher downloads reference images (image-to-image) and results
	// that come back as URLs; use the guarded fetcher (*fetch.Fetcher).
	// Without one, Plan refuses image-to-image.
	Fetcher fetch.ImageFetcher
	// Organization and Project, when set, are sent as the
	// OpenAI-Organization and OpenAI-Project headers.
	Organization, Project string
}

// Model is the OpenAI Images adapter. It is safe for concurrent use, and
// safe to print or log: the key stays in the client.
type Model struct {
	client *provider.Client
	cfg    Config // without its provider.Config, which the client holds
	family family
}

// New returns the adapter, or an error naming a bad field.
func New(c Config) (*Model, error) {
	client, err := provider.NewClient(&c.Config, provider.Defaults{
		Provider: Provider, BaseURL: DefaultBaseURL, Cost: DefaultCost,
		Classify: classify,

		// The generation call answers when the image is done: the
		// context bounds it (see provider's Timeouts).
		HTTPClient: provider.ContextBoundHTTPClient,
	})
	if err != nil {
		return nil, err
	}
	c.Model = cmp.Or(c.Model, DefaultModel)
	fam, ok := familyOf(c.Model)
	if !ok {
		return nil, fmt.Errorf("%s: Config.Model %q is not supported (a GPT image model such as gpt-image-1, or dall-e-3)", Provider, c.Model)
	}
	if c.Quality != "" && !slices.Contains(fam.qualities, c.Quality) {
		return nil, fmt.Errorf("%s: Config.Quality must be one of %s for %s (got %q)", Provider, strings.Join(fam.qualities, ", "), c.Model, c.Quality)
	}
	return &Model{client: client, cfg: c, family: fam}, nil
}

// Name is the model name recorded on tasks, e.g. "openai/gpt-image-1".
func (m *Model) Name() string { return Provider + "/" + m.cfg.Model }

// Plan accepts a request this model can run, at the configured cost. It
// refuses (with *imagegen.ValidationError) image-to-image on dall-e-3 or
// without a Fetcher, and, with ExactRatiosOnly, a ratio the model has no
// exact size for.
func (m *Model) Plan(req imagegen.Request) (imagegen.Plan, error) {
	if req.Scene == imagegen.SceneImageToImage {
		if !m.family.edits {
			return imagegen.Plan{}, &imagegen.ValidationError{Field: "scene", Message: fmt.Sprintf("image-to-image is not supported by model %s", m.cfg.Model)}
		}
		if m.cfg.Fetcher == nil {
			return imagegen.Plan{}, &imagegen.ValidationError{Field: "scene", Message: "image-to-image is not available on this server"}
		}
	}
	if m.cfg.ExactRatiosOnly && req.AspectRatio != "" && req.AspectRatio != imagegen.AspectAuto {
		if _, exact := m.family.sizeFor(req.AspectRatio); !exact {
			return imagegen.Plan{}, &imagegen.ValidationError{Field: "aspect_ratio", Message: fmt.Sprintf("must be one of %s or auto for model %s", joinRatios(m.family.exactRatios()), m.cfg.Model)}
		}
	}
	return imagegen.Plan{Model: m.Name(), Cost: m.client.Cost}, nil
}

func joinRatios(rs []imagegen.AspectRatio) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = string(r)
	}
	return strings.Join(s, ", ")
}

// Generate makes one image for g: text-to-image through
// /images/generations, image-to-image through /images/edits, then
// centre-crops it to the exact ratio when the model's size is only near.
// Failures are *imagegen.ModelError.
func (m *Model) Generate(ctx context.Context, g imagegen.Generation) ([]imagegen.GeneratedImage, error) {
	ctx, cancel := m.client.Bound(ctx) // Config.MaxDuration, for a ctx without a deadline
	defer cancel()
	req := g.Request
	i2i := req.Scene == imagegen.SceneImageToImage
	if i2i && !m.family.edits {
		return nil, &imagegen.ModelError{Provider: Provider, Message: "image-to-image is not supported by this model", Err: fmt.Errorf("model %s has no edits endpoint", m.cfg.Model)}
	}
	var refs []provider.Reference
	if i2i {
		var err error
		refs, err = provider.FetchReferences(ctx, Provider, m.cfg.Fetcher, req.ImageInput, provider.PNG, provider.JPEG, provider.WebP)
		if err != nil {
			return nil, err
		}
	}
	var allowed []imagegen.AspectRatio
	if m.cfg.ExactRatiosOnly {
		allowed = m.family.exactRatios()
	}
	ratio := provider.TargetRatio(req, refs, allowed)
	size, _ := m.family.sizeFor(ratio)

	build, err := m.build(req.Prompt, size, refs)
	if err != nil {
		return nil, &imagegen.ModelError{Provider: Provider, Message: provider.MsgMisconfigured, Err: err}
	}
	resp, err := m.client.Do(ctx, build)
	if err != nil {
		return nil, err
	}
	return m.images(ctx, resp, ratio)
}

// header is what every call sends besides its body.
func (m *Model) header() http.Header {
	h := http.Header{}
	h.Set("Authorization", "Bearer "+m.client.Key().Reveal())
	if m.cfg.Organization != "" {
		h.Set("OpenAI-Organization", m.cfg.Organization)
	}
	if m.cfg.Project != "" {
		h.Set("OpenAI-Project", m.cfg.Project)
	}
	return h
}
