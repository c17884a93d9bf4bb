package replicate

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/fetch"
	"github.com/imagegen/imagegen/model/provider"
)

// Provider names this adapter in errors (ModelError.Provider).
const Provider = "replicate"

// Defaults.
const (
	DefaultBaseURL = "https://api.replicate.com/v1"
	// DefaultModel is an official model that does both scenes.
	DefaultModel = "black-forest-labs/flux-kontext-pro"
	// DefaultCost: flux-kontext-pro is billed per image at about the
	// price of gpt-image-1 (openai, 2).
	DefaultCost = 2
	// DefaultReferenceInput is the input of DefaultModel that takes the
	// reference image.
	DefaultReferenceInput = "input_image"
	// DefaultSeedInput is the input of DefaultModel that takes the seed.
	DefaultSeedInput = "seed"
	// DefaultOutputHost is where Replicate serves outputs (its
	// subdomains included).
	DefaultOutputHost = "replicate.delivery"
	// DefaultPollInterval is the wait between two reads of a prediction
	// (replicate-go's default).
	DefaultPollInterval = time.Second
	// MaxSyncWait is the longest "Prefer: wait" the API takes.
	MaxSyncWait = 60 * time.Second
)

var _ imagegen.Model = (*Model)(nil)

// Config configures the adapter. The embedded provider.Config holds the
// HTTP client, base URL, API token, cost (default 2), retries and clock.
type Config struct {
	provider.Config
	// Model is the official model, "owner/name". Default
	// black-forest-labs/flux-kontext-pro. It must take the inputs prompt,
	// aspect_ratio and output_format, as the FLUX models do.
	Model string
	// ReferenceInput is the model's input that takes one reference
	// image. Default "input_image" for DefaultModel; for another model,
	// empty means text-to-image only.
	ReferenceInput string
	// SeedInput is the model's input that takes the task's seed.
	// Default "seed" for DefaultModel; for another model, empty means it
	// takes none (its tasks report no seed). The FLUX models call it
	// "seed".
	SeedInput string
	// Fetcher downloads reference images and the outputs (Replicate
	// answers with URLs). Required; use the guarded fetcher
	// (*fetch.Fetcher).
	Fetcher fetch.ImageFetcher
	// OutputHosts are the hosts (their subdomains included) an output
	// may be downloaded from. Default: replicate.delivery.
	OutputHosts []string
	// PollInterval is the wait between two reads of a running
	// prediction. Default 1 s.
	PollInterval time.Duration
	// SyncWait bounds the "Prefer: wait" of a create call (1 s to 60 s,
	// and always some seconds short of the context's deadline). 0 means
	// 60 s; a negative value sends no Prefer header (poll only).
	SyncWait time.Duration
}

// Model is the Replicate adapter. It is safe for concurrent use, and
// safe to print or log: the token stays in the client.
type Model struct {
	client *provider.Client
	cfg    Config // without its provider.Config, which the client holds
	owner  string
	name   string
}

// modelPart reports whether s is an owner or a model name: letters,
// digits, '.', '_' and '-', not starting with punctuation.
func modelPart(s string) bool {
	return s != "" && isAlnum(s[0]) && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == ""
}

// inputName reports whether s can name a model input (input_image).
func inputName(s string) bool {
	return s != "" && !('0' <= s[0] && s[0] <= '9') && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == ""
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// New returns the adapter, or an error naming a bad field.
func New(c Config) (*Model, error) {
	client, err := provider.NewClient(&c.Config, provider.Defaults{
		Provider: Provider, BaseURL: DefaultBaseURL, Cost: DefaultCost,
		Classify: classify, RetryDelay: retryDelay,
	})
	if err != nil {
		return nil, err
	}
	c.Model = cmp.Or(c.Model, DefaultModel)
	owner, name, ok := strings.Cut(c.Model, "/")
	if !ok || !modelPart(owner) || !modelPart(name) {
		return nil, fmt.Errorf("%s: Config.Model must be an official model as owner/name (got %q)", Provider, c.Model)
	}
	if c.Model == DefaultModel {
		c.ReferenceInput = cmp.Or(c.ReferenceInput, DefaultReferenceInput)
		c.SeedInput = cmp.Or(c.SeedInput, DefaultSeedInput)
	}
	if c.SeedInput != "" && !inputName(c.SeedInput) {
		return nil, fmt.Errorf("%s: Config.SeedInput must be an input name such as seed (got %q)", Provider, c.SeedInput)
	}
	if c.ReferenceInput != "" && !inputName(c.ReferenceInput) {
		return nil, fmt.Errorf("%s: Config.ReferenceInput must be an input name such as input_image (got %q)", Provider, c.ReferenceInput)
	}
	if c.Fetcher == nil {
		return nil, fmt.Errorf("%s: Config.Fetcher is required (Replicate answers with URLs to download)", Provider)
	}
	if len(c.OutputHosts) == 0 {
		c.OutputHosts = []string{DefaultOutputHost}
	}
	for _, h := range c.OutputHosts {
		if h == "" || strings.ContainsAny(h, "/:@ ") {
			return nil, fmt.Errorf("%s: Config.OutputHosts must hold host names (got %q)", Provider, h)
		}
	}
	switch {
	case c.PollInterval == 0:
		c.PollInterval = DefaultPollInterval
	case c.PollInterval < 0:
		return nil, fmt.Errorf("%s: Config.PollInterval must not be negative (got %v)", Provider, c.PollInterval)
	}
	switch {
	case c.SyncWait == 0:
		c.SyncWait = MaxSyncWait
	case c.SyncWait > MaxSyncWait:
		return nil, fmt.Errorf("%s: Config.SyncWait must be at most %v (got %v)", Provider, MaxSyncWait, c.SyncWait)
	}
	return &Model{client: client, cfg: c, owner: owner, name: name}, nil
}

// Name is the model name recorded on tasks, e.g.
// "replicate/black-forest-labs/flux-kontext-pro".
func (m *Model) Name() string { return Provider + "/" + m.cfg.Model }

// Plan accepts every ratio, at the configured cost. It refuses
// (*imagegen.ValidationError) image-to-image when the model takes no
// reference image, and more than one reference image.
func (m *Model) Plan(req imagegen.Request) (imagegen.Plan, error) {
	if req.Scene == imagegen.SceneImageToImage {
		if m.cfg.ReferenceInput == "" {
			return imagegen.Plan{}, &imagegen.ValidationError{Field: "scene", Message: fmt.Sprintf("image-to-image is not supported by model %s", m.cfg.Model)}
		}
		if n := len(req.ImageInput); n > 1 {
			return imagegen.Plan{}, &imagegen.ValidationError{Field: "image_input", Message: fmt.Sprintf("must hold one URL for model %s (got %d)", m.cfg.Model, n)}
		}
	}
	return imagegen.Plan{Model: m.Name(), Cost: m.client.Cost, Seeded: m.cfg.SeedInput != ""}, nil
}

// Generate creates a prediction (waiting for it on the create call,
// within bounds), polls it until it ends, cancels it if ctx ends first,
// downloads its output and centre-crops it to the exact ratio. Failures
// are *imagegen.ModelError.
func (m *Model) Generate(ctx context.Context, g imagegen.Generation) ([]imagegen.GeneratedImage, error) {
	ctx, cancel := m.client.Bound(ctx) // Config.MaxDuration, for a ctx without a deadline
	defer cancel()
	req := g.Request
	var refs []provider.Reference
	if _, err := m.Plan(req); err != nil { // when called without Plan
		return nil, &imagegen.ModelError{Provider: Provider, InvalidInput: true, Message: err.Error(), Err: err}
	}
	if req.Scene == imagegen.SceneImageToImage {
		var err error
		refs, err = provider.FetchReferences(ctx, Provider, m.cfg.Fetcher, req.ImageInput, provider.PNG, provider.JPEG, provider.WebP, provider.GIF)
		if err != nil {
			return nil, err
		}
	}
	p, err := m.create(ctx, m.input(req, refs))
	if err != nil {
		return nil, err
	}
	p, err = m.await(ctx, p)
	if err != nil {
		return nil, err
	}
	if p.Status != statusSucceeded {
		return nil, p.failure()
	}
	imgs, err := m.outputs(ctx, p)
	if err != nil {
		return nil, err
	}
	return provider.CropAll(Provider, imgs, provider.AnswerRatio(req, refs))
}

// header is what every API call sends besides its body.
func (m *Model) header() http.Header {
	h := http.Header{}
	h.Set("Authorization", "Bearer "+m.client.Key().Reveal())
	return h
}
