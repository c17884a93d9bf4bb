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
	// Each image must have bytes and be a PNG, JPEG, WebP, GIF, AVIF,
	// HEIC or HEIF (see GeneratedImage.ContentType); an answer that
	// breaks this fails the attempt, and the task is failed and
	// refunded.
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
	// ContentType is the image's media type. The service stores it
	// lowercased and without parameters when SafeImageType accepts it
	// ("Image/PNG; x=y" is stored as image/png). When it is "" or not a
	// safe type, the service reads the type from Data's first bytes
	// instead, and uses it if it is a safe one. Otherwise the answer is
	// not an image (an HTML page, an SVG, which a browser would run as a
	// page of the image's origin, or anything else): the attempt fails
	// with a *ModelError that is not retried, and the task is failed
	// and refunded, with nothing stored.
	ContentType string
	// Data is the image's bytes; an image of none fails the attempt
	// (retried).
	Data []byte
	// Seed, when not nil, is the seed the provider reports it made the
	// image with (an sdapi server's info, Black Forest Labs' result).
	// When it is not the task's, the service records it as the task's
	// seed, so the task shows the seed that makes the image again; a
	// model whose provider reports none leaves it nil.
	Seed *int64
}

// MaxTaskImages is the most pictures a task keeps from one generation:
// providers answer one picture or a few variants, and a model's answer
// that holds more (a custom model's fault, or a provider's) fails the
// attempt without storing any, as a model that answers no picture does.
// The built-in adapters refuse such answers before downloading them
// (model/provider.MaxAnswerImages), and `imagegen generate` refuses a
// task that lists more.
const MaxTaskImages = 16

// Cost limits of docs/api.md, "Limits".
const (
	MinCost = 1
	MaxCost = 3
)
