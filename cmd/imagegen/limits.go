package main

import (
	"flag"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/imagegen/imagegen"
)

// limitFlags are the scheduler's flags (docs/scheduling.md), the same
// for serve and worker: every process on one store should use the same.
type limitFlags struct {
	ownerConcurrency int
	modelConcurrency string
	modelRate        string
	maxPending       int
}

func (c *limitFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&c.ownerConcurrency, "owner-concurrency", 0, "at most this many tasks of one user run at once, across every process on the store (0: no cap)")
	fs.StringVar(&c.modelConcurrency, "model-concurrency", "", "at most N generations of a model run at once, across every process on the store: NAME=N[,NAME=N...], NAME as in -model (e.g. placeholder=1, comfyui=2, openai/gpt-image-1=8)")
	fs.StringVar(&c.modelRate, "model-rate", "", "at most N generations of a model start a minute, across every process on the store, spread evenly: NAME=N/m[,NAME=N/m...] (e.g. openai/gpt-image-1=50/m)")
	fs.IntVar(&c.maxPending, "max-pending", imagegen.DefaultMaxPending, "pending tasks one user may have; a submit beyond it is refused with 429 and charged nothing (0: no cap)")
}

func (c limitFlags) validate() error {
	switch {
	case c.ownerConcurrency < 0:
		return fmt.Errorf("-owner-concurrency must not be negative (got %d; 0 is no cap)", c.ownerConcurrency)
	case c.maxPending < 0:
		return fmt.Errorf("-max-pending must not be negative (got %d; 0 is no cap)", c.maxPending)
	}
	if _, err := parseModelLimits("-model-concurrency", c.modelConcurrency, false); err != nil {
		return err
	}
	_, err := parseModelLimits("-model-rate", c.modelRate, true)
	return err
}

// limits are the flags' Limits for a process that runs the models of
// the -model spec: each NAME is checked against them and turned into
// the model name its tasks carry.
func (c limitFlags) limits(spec string, m imagegen.Model) (imagegen.Limits, error) {
	names, err := modelNames(spec, m)
	if err != nil {
		return imagegen.Limits{}, err
	}
	l := imagegen.Limits{OwnerConcurrency: c.ownerConcurrency}
	for _, f := range []struct {
		flag, spec string
		rate       bool
		into       *map[string]int
	}{
		{"-model-concurrency", c.modelConcurrency, false, &l.ModelConcurrency},
		{"-model-rate", c.modelRate, true, &l.ModelRate},
	} {
		given, err := parseModelLimits(f.flag, f.spec, f.rate)
		if err != nil {
			return imagegen.Limits{}, err
		}
		for name, n := range given {
			task, ok := names[name]
			if !ok {
				known := slices.Sorted(maps.Keys(names))
				return imagegen.Limits{}, fmt.Errorf("%s: unknown model %q: this process runs %s (-model %s)", f.flag, name, strings.Join(known, ", "), spec)
			}
			if *f.into == nil {
				*f.into = map[string]int{}
			}
			(*f.into)[task] = n
		}
	}
	return l, l.Validate()
}

// maxPendingConfig is -max-pending as imagegen.Config.MaxPending takes
// it: 0 (no cap) is negative there.
func (c limitFlags) maxPendingConfig() int {
	if c.maxPending == 0 {
		return -1
	}
	return c.maxPending
}

// parseModelLimits reads NAME=N[,NAME=N...] (with rate, NAME=N/m).
func parseModelLimits(flagName, spec string, rate bool) (map[string]int, error) {
	want := "NAME=N, e.g. placeholder=1"
	if rate {
		want = "NAME=N/m (starts a minute), e.g. openai/gpt-image-1=50/m"
	}
	out := map[string]int{}
	for item := range strings.SplitSeq(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, value, ok := strings.Cut(item, "=")
		name = strings.TrimSpace(name)
		switch {
		case !ok:
			return nil, fmt.Errorf("%s %q: want %s", flagName, item, want)
		case name == "":
			return nil, fmt.Errorf("%s %q: a model name must come before =; want %s", flagName, item, want)
		}
		if rate {
			v, ok := strings.CutSuffix(strings.TrimSpace(value), "/m")
			if !ok {
				return nil, fmt.Errorf("%s %q: the rate must end in /m (starts a minute); want %s", flagName, item, want)
			}
			value = v
		}
		n, err := strconv.Atoi(strings.TrimSpace(value))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s %q: N must be a whole number of at least 1; want %s", flagName, item, want)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("%s: model %q is named twice", flagName, name)
		}
		out[name] = n
	}
	return out, nil
}

// modelNames maps each name a flag may give a model of the -model spec
// to the model name its tasks carry (Task.Model): one adapter's tasks
// carry its full name (openai/gpt-image-1), a fallback chain's the
// chain entry's name as written in -model. Both the written name and
// the provider alone (when only one entry has it) are accepted.
func modelNames(spec string, m imagegen.Model) (map[string]string, error) {
	choices, err := parseModels(spec)
	if err != nil {
		return nil, err
	}
	names := map[string]string{}
	providers := map[string]int{}
	for _, c := range choices {
		providers[c.provider]++
	}
	for _, c := range choices {
		task := c.String()
		if named, ok := m.(interface{ Name() string }); ok && len(choices) == 1 {
			task = named.Name()
		}
		names[c.String()], names[task] = task, task
		if providers[c.provider] == 1 {
			names[c.provider] = task
		}
	}
	return names, nil
}
