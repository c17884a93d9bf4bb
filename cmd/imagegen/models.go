package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/fetch"
	"github.com/imagegen/imagegen/model/a1111"
	"github.com/imagegen/imagegen/model/bfl"
	"github.com/imagegen/imagegen/model/comfyui"
	"github.com/imagegen/imagegen/model/fal"
	"github.com/imagegen/imagegen/model/gemini"
	"github.com/imagegen/imagegen/model/openai"
	"github.com/imagegen/imagegen/model/placeholder"
	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/replicate"
	"github.com/imagegen/imagegen/model/route"
	"github.com/imagegen/imagegen/model/stability"
)

// The guarded fetcher is what every adapter fetches reference images and
// URL results with.
var _ placeholder.ReferenceFetcher = (*fetch.Fetcher)(nil)

// modelChoice is one item of -model: provider[/model][=cost].
type modelChoice struct {
	provider string // "placeholder", "openai", ...
	model    string // the provider's model id; "" for its default
	cost     int64  // 0 keeps the adapter's default
}

func (m modelChoice) String() string {
	s := m.provider
	if m.model != "" {
		s += "/" + m.model
	}
	return s
}

// parseModels reads -model: a comma-separated fallback chain, such as
// "openai", "gemini/gemini-3-pro-image-preview=3" or "openai,gemini".
func parseModels(spec string) ([]modelChoice, error) {
	var out []modelChoice
	for item := range strings.SplitSeq(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		var m modelChoice
		if name, cost, ok := strings.Cut(item, "="); ok {
			n, err := strconv.ParseInt(cost, 10, 64)
			if err != nil || n < imagegen.MinCost || n > imagegen.MaxCost {
				return nil, fmt.Errorf("-model %q: the cost after = must be %d to %d", item, imagegen.MinCost, imagegen.MaxCost)
			}
			item, m.cost = name, n
		}
		m.provider, m.model, _ = strings.Cut(item, "/")
		if !slices.Contains(providerNames(), m.provider) {
			return nil, fmt.Errorf("-model %q: unknown provider %q (one of %s)", item, m.provider, strings.Join(providerNames(), ", "))
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		return nil, errors.New("-model names no model")
	}
	return out, nil
}

// modelIDs names each model of -model spec (as tasks record them), for
// the OpenAI-compatible model list; nil when spec does not parse (the
// model's construction reports that).
func modelIDs(spec string) []string {
	choices, err := parseModels(spec)
	if err != nil {
		return nil
	}
	ids := make([]string, len(choices))
	for i, c := range choices {
		ids[i] = c.String()
	}
	return ids
}

// providerNames are the values -model takes before the slash.
func providerNames() []string {
	return []string{placeholder.Name, openai.Provider, gemini.Provider, fal.Provider, replicate.Provider, stability.Provider, bfl.Provider, a1111.Provider, comfyui.Provider}
}

// apiKeyVar names the environment variable holding a provider's API key,
// as the provider's own tools name it.
func apiKeyVar(providerName string) string {
	switch providerName {
	case fal.Provider:
		return "FAL_KEY"
	case replicate.Provider:
		return "REPLICATE_API_TOKEN"
	}
	return strings.ToUpper(providerName) + "_API_KEY"
}

// baseURLVar names the environment variable that points a provider's
// adapter at another API root (required for a self-hosted server).
func baseURLVar(providerName string) string {
	return strings.ToUpper(providerName) + "_BASE_URL"
}

// modelDeps is what building a model needs besides its choice.
type modelDeps struct {
	getenv  func(string) string
	fetcher *fetch.Fetcher
	clock   imagegen.Clock
	delay   time.Duration // the placeholder's
	size    int           // the placeholder's long side (0: its default)
	log     *slog.Logger
}

// newModel builds the model -model names: one adapter, or a fallback
// chain of several (each at its own price; the chain charges the price of
// the first that accepts the request).
func newModel(spec string, d modelDeps) (imagegen.Model, error) {
	choices, err := parseModels(spec)
	if err != nil {
		return nil, err
	}
	entries := make([]route.Entry, len(choices))
	names := make([]string, len(choices))
	for i, c := range choices {
		m, err := buildModel(c, d)
		if err != nil {
			return nil, err
		}
		names[i] = c.String()
		entries[i] = route.Entry{Name: names[i], Model: m}
	}
	if len(entries) == 1 {
		return entries[0].Model, nil
	}
	return route.NewFallback(strings.Join(names, ","), entries...)
}

// selfHosted reports whether a provider is a server the operator runs:
// its <PROVIDER>_BASE_URL is required, and its key optional.
func selfHosted(providerName string) bool {
	return providerName == a1111.Provider || providerName == comfyui.Provider
}

// defaultAddress is where a self-hosted server listens by default.
func defaultAddress(providerName string) string {
	if providerName == comfyui.Provider {
		return "http://127.0.0.1:8188"
	}
	return "http://127.0.0.1:7860"
}

// buildModel builds one adapter. A provider's API key comes from its
// environment variable (see apiKeyVar), never from a
// flag, so it shows in no process listing; <PROVIDER>_BASE_URL points the
// adapter at another API root (a proxy, or a fake in tests), and is the
// address of a self-hosted server.
func buildModel(c modelChoice, d modelDeps) (imagegen.Model, error) {
	if c.provider == placeholder.Name {
		if c.model != "" {
			return nil, fmt.Errorf("-model %q: the placeholder has no model names", c)
		}
		return placeholder.New(placeholder.Config{Delay: d.delay, LongSide: d.size, Cost: c.cost, Fetcher: d.fetcher, Clock: d.clock})
	}
	keyVar := apiKeyVar(c.provider)
	key := d.getenv(keyVar)
	if key == "" && !selfHosted(c.provider) {
		return nil, fmt.Errorf("-model %s needs the API key in %s", c, keyVar)
	}
	baseVar := baseURLVar(c.provider)
	baseURL := d.getenv(baseVar)
	if baseURL == "" && selfHosted(c.provider) {
		return nil, fmt.Errorf("-model %s needs the server's address in %s (e.g. %s)", c, baseVar, defaultAddress(c.provider))
	}
	pc := provider.Config{APIKey: provider.Secret(key), BaseURL: baseURL, Cost: c.cost, Clock: d.clock}
	switch c.provider {
	case openai.Provider:
		return openai.New(openai.Config{Config: pc, Model: c.model, Fetcher: d.fetcher})
	case gemini.Provider:
		return gemini.New(gemini.Config{Config: pc, Model: c.model, Fetcher: d.fetcher})
	case fal.Provider:
		return fal.New(fal.Config{Config: pc, Model: c.model, Fetcher: d.fetcher, Logger: d.log})
	case replicate.Provider:
		return replicate.New(replicate.Config{Config: pc, Model: c.model, Fetcher: d.fetcher})
	case stability.Provider:
		return stability.New(stability.Config{Config: pc, Model: c.model, Fetcher: d.fetcher})
	case bfl.Provider:
		return bfl.New(bfl.Config{Config: pc, Model: c.model, Fetcher: d.fetcher})
	case a1111.Provider:
		return a1111.New(a1111.Config{Config: pc, Checkpoint: c.model, Fetcher: d.fetcher, Logger: d.log})
	case comfyui.Provider:
		return newComfyUI(c, pc, d)
	}
	return nil, fmt.Errorf("-model %q: unknown provider", c)
}

// comfyWorkflowsVar names the folder of an operator's ComfyUI workflows
// (NAME.json, NAME.img2img.json), read from the environment only.
const comfyWorkflowsVar = "COMFYUI_WORKFLOWS"

// newComfyUI builds -model comfyui[/NAME]: NAME is an operator's
// workflow when comfyWorkflowsVar holds NAME.json or NAME.img2img.json,
// else the checkpoint of the built-in workflows.
func newComfyUI(c modelChoice, pc provider.Config, d modelDeps) (imagegen.Model, error) {
	cfg := comfyui.Config{Config: pc, Checkpoint: c.model, Fetcher: d.fetcher, Logger: d.log}
	if dir := d.getenv(comfyWorkflowsVar); dir != "" && c.model != "" {
		w, found, err := comfyui.ReadWorkflows(os.DirFS(dir), c.model)
		if err != nil {
			return nil, fmt.Errorf("-model %s: %s: %w", c, comfyWorkflowsVar, err)
		}
		if found {
			cfg.Workflows, cfg.Name, cfg.Checkpoint = w, c.model, ""
		}
	}
	m, err := comfyui.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("-model %s: %w", c, err)
	}
	return m, nil
}
