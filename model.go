package imagegen

import "context"

// Model generates images. Implementations live in model/ (placeholder,
// provider adapters, routing); the service only sees this interface.
type Model interface {
	// Plan chooses what will run req and what it costs, at submit. It
	// must be quick and must not do I/O. A *ValidationError refuses the
	// request (for example a ratio that the chosen model cannot make).
	Plan(req Request) (Plan, error)
	// Generate runs a planned generation. Failures are *ModelError.
	Generate(ctx context.Context, g Generation) ([]GeneratedImage, error)
}

// Plan is the model's choice for one request, recorded on the task.
type Plan struct {
	Model string // name of the model that will run the task
	Cost  int64  // credits, 1 to 3
	// Seeded says the model honours Request.Seed: the same seed and
	// input give the same picture (or the provider's best effort at it).
	// Without it the task records no seed.
	Seeded bool
}

// Generation is the work handed to a Model.
type Generation struct {
	TaskID  string
	Model   string // Plan.Model, as chosen at submit
	Request Request
	Attempt int
	// RequestID is the task's RequestID, for models' logs.
	RequestID string
	// Events, when not nil, is told of each provider call and fallback
	// inside Generate (routing models report them). Set by the service.
	Events GenerationEvents
	// Progress, when not nil, is told how far the generation has come,
	// from 0 to 1, by models whose provider reports it (ComfyUI, sdapi
	// servers, Black Forest Labs). Set by the service, which keeps it on
	// the task for the full view; models call ReportProgress.
	Progress func(fraction float64)
}

// ReportProgress tells g.Progress (when set) how far the generation
// has come: fraction is clamped to 0..1, and NaN is dropped.
func (g Generation) ReportProgress(fraction float64) {
	if g.Progress == nil || fraction != fraction {
		return
	}
	g.Progress(min(max(fraction, 0), 1))
}

// GeneratedImage is one picture produced by a model.
type GeneratedImage struct {
	ContentType string
	Data        []byte
	// Seed, when not nil, is the seed the provider reports it made the
	// image with (an sdapi server's info, Black Forest Labs' result).
	// When it is not the task's, the service records it as the task's
	// seed, so the task shows the seed that makes the image again; a
	// model whose provider reports none leaves it nil.
	Seed *int64
}

// Cost limits of docs/api.md, "Limits".
const (
	MinCost = 1
	MaxCost = 3
)
