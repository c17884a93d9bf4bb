package comfyui

import (
	"bytes"
	_ "embed" // the built-in workflows
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Workflows are an operator's own ComfyUI workflows, in the API format
// ("Save (API)" in ComfyUI: {"<node id>": {"class_type": ..., "inputs":
// {...}}}), with placeholders where the request's values go. Either may
// be nil: the model then does not take that scene.
type Workflows struct {
	TextToImage  []byte // must hold {{prompt}}
	ImageToImage []byte // must hold {{prompt}} and {{image}}
}

// The built-in workflows, which are also examples of the placeholders.
var (
	//go:embed workflows/text-to-image.json
	textToImageJSON []byte
	//go:embed workflows/image-to-image.json
	imageToImageJSON []byte
)

// Placeholders. Text ones may stand inside a longer string ("a photo
// of {{prompt}}"); the numeric ones must be a whole string value
// ("{{width}}") and become numbers.
const (
	phPrompt     = "{{prompt}}"
	phNegative   = "{{negative_prompt}}"
	phCheckpoint = "{{checkpoint}}"
	phWidth      = "{{width}}"
	phHeight     = "{{height}}"
	phSeed       = "{{seed}}"
)

// imagePlaceholder matches {{image}} (the first reference) and
// {{image_N}} (the Nth, N from 2).
var imagePlaceholder = regexp.MustCompile(`\{\{image(?:_([2-9]))?\}\}`)

// textPlaceholder matches the placeholders that may stand inside text.
var textPlaceholder = regexp.MustCompile(`\{\{(?:prompt|negative_prompt|checkpoint|image(?:_[2-9])?)\}\}`)

// anyPlaceholder matches anything that looks like a placeholder, to
// refuse unknown ones (a typo would reach ComfyUI as text).
var anyPlaceholder = regexp.MustCompile(`\{\{[a-z_0-9]+\}\}`)

// workflow is a parsed API-format workflow.
type workflow struct {
	nodes  map[string]any
	seeded bool // holds {{seed}}
	images int  // references it takes: 1 for {{image}}, N for {{image_N}}
}

// parseWorkflow reads an API-format workflow and checks its
// placeholders: {{prompt}} always, {{image}} for image-to-image, the
// numeric ones as whole values, no unknown one.
func parseWorkflow(data []byte, i2i bool) (*workflow, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var nodes map[string]any
	if err := dec.Decode(&nodes); err != nil {
		return nil, fmt.Errorf("not a JSON object of nodes: %w", err)
	}
	if len(nodes) == 0 {
		return nil, errors.New("no nodes")
	}
	for _, id := range slices.Sorted(maps.Keys(nodes)) { // the first bad node, always the same
		node, ok := nodes[id].(map[string]any)
		class, _ := node["class_type"].(string)
		_, hasInputs := node["inputs"].(map[string]any)
		if !ok || class == "" || !hasInputs {
			return nil, fmt.Errorf("node %q has no class_type and inputs: not the API format (export it with \"Save (API)\")", id)
		}
	}
	w := &workflow{nodes: nodes}
	seen := map[string]bool{}
	var bad error
	walk(nodes, func(s string) {
		for _, p := range anyPlaceholder.FindAllString(s, -1) {
			seen[p] = true
			switch {
			case p == phWidth || p == phHeight || p == phSeed:
				if s != p && bad == nil {
					bad = fmt.Errorf("%s must be a whole value, not inside %q", p, s)
				}
			case p == phPrompt || p == phNegative || p == phCheckpoint:
			case imagePlaceholder.MatchString(p):
				n := 1
				if m := imagePlaceholder.FindStringSubmatch(p); m[1] != "" {
					n, _ = strconv.Atoi(m[1])
				}
				w.images = max(w.images, n)
			default:
				if bad == nil {
					bad = fmt.Errorf("unknown placeholder %s", p)
				}
			}
		}
	})
	switch {
	case bad != nil:
		return nil, bad
	case !seen[phPrompt]:
		return nil, fmt.Errorf("no %s placeholder", phPrompt)
	case i2i && w.images == 0:
		return nil, errors.New("no {{image}} placeholder")
	case !i2i && w.images > 0:
		return nil, errors.New("an image placeholder in a text-to-image workflow")
	}
	w.seeded = seen[phSeed]
	return w, nil
}

// walk calls f with every string value of v.
func walk(v any, f func(string)) {
	switch v := v.(type) {
	case string:
		f(v)
	case map[string]any:
		for _, e := range v {
			walk(e, f)
		}
	case []any:
		for _, e := range v {
			walk(e, f)
		}
	}
}

// values are what a request puts in the placeholders.
type values struct {
	prompt, negative, checkpoint string
	width, height                int
	seed                         *int64
	images                       []string // the uploaded references' names
}

// fill returns a copy of the workflow with the placeholders replaced.
// A request without a seed (a model whose workflow is seeded always gets
// one from the service) gets a random one.
func (w *workflow) fill(v values) (map[string]any, error) {
	seed := rand.Int64N(1 << 32)
	if v.seed != nil {
		seed = *v.seed
	}
	if len(v.images) > w.images {
		return nil, fmt.Errorf("%d references for a workflow that takes %d", len(v.images), w.images)
	}
	var missing error
	// text fills the text placeholders of s in one pass over the
	// workflow's own text: what a value brings (a prompt holding
	// "{{image}}") is never read as a placeholder.
	text := func(s string) string {
		return textPlaceholder.ReplaceAllStringFunc(s, func(p string) string {
			switch p {
			case phPrompt:
				return v.prompt
			case phNegative:
				return v.negative
			case phCheckpoint:
				return v.checkpoint
			}
			n := 1
			if m := imagePlaceholder.FindStringSubmatch(p); m[1] != "" {
				n, _ = strconv.Atoi(m[1])
			}
			if n > len(v.images) {
				missing = fmt.Errorf("the workflow wants reference %d; the request has %d", n, len(v.images))
				return p
			}
			return v.images[n-1]
		})
	}
	var sub func(any) any
	sub = func(x any) any {
		switch x := x.(type) {
		case string:
			switch x {
			case phWidth:
				return v.width
			case phHeight:
				return v.height
			case phSeed:
				return seed
			}
			return text(x)
		case map[string]any:
			out := make(map[string]any, len(x))
			for k, e := range x {
				out[k] = sub(e)
			}
			return out
		case []any:
			out := make([]any, len(x))
			for i, e := range x {
				out[i] = sub(e)
			}
			return out
		}
		return x
	}
	out := sub(w.nodes).(map[string]any)
	if missing != nil {
		return nil, missing
	}
	return out, nil
}

// ReadWorkflows reads an operator's workflows for the model id name
// from dir: <name>.json (text-to-image) and <name>.img2img.json
// (image-to-image), either may be missing. found is false when neither
// exists (name is then a checkpoint, for the built-in workflows). name
// must be a plain file name: no path.
func ReadWorkflows(dir fs.FS, name string) (w Workflows, found bool, err error) {
	if name == "" || strings.ContainsAny(name, `/\`) || !fs.ValidPath(name) {
		return Workflows{}, false, fmt.Errorf("workflow name %q: want a plain file name", name)
	}
	for _, f := range []struct {
		file string
		dst  *[]byte
	}{{name + ".json", &w.TextToImage}, {name + ".img2img.json", &w.ImageToImage}} {
		data, err := fs.ReadFile(dir, f.file)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return Workflows{}, false, fmt.Errorf("reading workflow %s: %w", f.file, err)
		}
		*f.dst, found = data, true
	}
	return w, found, nil
}
