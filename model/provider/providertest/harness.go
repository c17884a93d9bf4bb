package providertest

import (
	"testing"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/retry"
	"github.com/imagegen/imagegen/model/provider"
)

// Harness tells Run how to test one adapter against its fake API: F is
// the adapter's fake (what its tests script and inspect), C its Config
// (which embeds a provider.Config) and M its Model. The scenarios say
// how the fake answers and what the adapter must make of it; what Run
// checks beyond that is the same for every adapter (see Run).
type Harness[F Fake, C any, M Model] struct {
	Provider string          // ModelError.Provider
	Key      provider.Secret // the key the fake takes
	New      func(C) (M, error)
	// NewFake starts a fake API for one test.
	NewFake func(t *testing.T) F
	// NewModel returns the adapter built from c, pointed at f, and the
	// InstantClock it waits on (see Configure): f's key unless c names
	// one, a new InstantClock unless c has a clock.
	NewModel func(t *testing.T, f F, c C) (M, *InstantClock)

	// Constructions: configs New must refuse, or take.
	Constructions []Construction[C]
	// TextToImage: text-to-image generations, each with its Plan and
	// image Size; the first one's config is the one Run checks for the
	// key.
	TextToImage []Success[F, C]
	// ImageToImage: generations with reference images; none when the
	// provider takes no references (Unplannable then says so).
	ImageToImage []Success[F, C]
	// Unplannable: requests Plan refuses with a *imagegen.ValidationError
	// and Generate, unplanned, fails without calling the provider.
	Unplannable  []Unplannable[C]
	AspectRatios []Ratios[F, C]
	// Refusals: content policy refusals, each a Failure whose outcome
	// is Refused (Message MsgRefused unless Want.Message says otherwise).
	Refusals []Failure[F, C]
	// NoContentPolicy, for a provider that refuses no content (a
	// self-hosted server: ComfyUI, an sdapi server), says why; Refusals
	// may then be empty.
	NoContentPolicy string
	// RateLimited: a 429 (or the provider's like of it), then success.
	RateLimited []Success[F, C]
	// ServerErrors: 5xx answers, then success.
	ServerErrors []Success[F, C]
	// Timeouts: the fake holds its answer (or the job never ends) until
	// the deadline passes: Retryable, MsgTimeout, Failure.Is (default
	// context.DeadlineExceeded), within seconds of the deadline
	// (Failure.Deadline, default 200 ms).
	Timeouts []Failure[F, C]
	// BadKey: the adapter sends a key the fake does not take:
	// Misconfigured, not retried, and the key shows nowhere.
	BadKey Failure[F, C]
	// GiveUp, for a provider whose jobs can be cancelled: the caller
	// gives up (its context is cancelled) while the job runs; the
	// adapter must cancel the job (Calls ends with the cancel) and fail
	// with context.Canceled, Retryable.
	GiveUp *Failure[F, C]
	// Failures: other documented failures, each with its whole outcome.
	Failures []Failure[F, C]
	// SentSeed, for a provider that takes the task's seed: the seed in
	// f's latest generation request, or nil when it sent none. Run then
	// checks, with the first TextToImage config, that a request's seed
	// (imagegen.MaxSeed) is sent as it is and that a request without one
	// sends none. Leave it nil when no TextToImage plan is Seeded.
	SentSeed func(t *testing.T, f F) *int64
	// SeedAlways, for a provider whose request must carry a seed
	// (ComfyUI's KSampler): without the task's, the adapter sends a
	// random one. Run then checks that two requests without a seed send
	// two different seeds, instead of none.
	SeedAlways bool
}

// Fake is what Run needs of an adapter's fake API; a fake that embeds a
// Script has it.
type Fake interface {
	Queue(kind string, answers ...Answer)
	Kinds() []string
}

// Model is what Run needs of an adapter's Model.
type Model interface {
	imagegen.Model
	Name() string
}

// Construction is a config for the adapter's New: New must refuse it
// with an error that begins with Err or, when Err is empty, take it and
// make the model Model, whose plans cost Cost when set.
type Construction[C any] struct {
	Name   string
	Config C
	Err    string
	Model  string
	Cost   int64
}

// Success is a generation that must succeed.
type Success[F, C any] struct {
	Name    string
	Config  C
	Request imagegen.Request // default: a 1:1 text-to-image request
	// Answers are queued for the fake's calls of kind AnswersTo (see
	// Script) before the generation; Setup scripts the fake further.
	Answers   []Answer
	AnswersTo string
	Setup     func(t *testing.T, f F)
	Plan      imagegen.Plan // checked when set
	// ContentType of every image; default image/png.
	ContentType string
	Size        provider.Size // of the one image; checked when set
	Calls       []string      // the kinds of the calls the fake received
	Waits       []Wait        // the waits on the clock; nil: none
	// Check checks what is particular to the provider: the request on
	// the wire, the references fetched (optional).
	Check func(t *testing.T, f F)
}

// Failure is a generation that must fail with a *imagegen.ModelError.
type Failure[F, C any] struct {
	Name    string
	Config  C
	Request imagegen.Request // default: a 1:1 text-to-image request
	// Answers, AnswersTo and Setup script the fake, as for a Success.
	Answers   []Answer
	AnswersTo string
	Setup     func(t *testing.T, f F)
	// Deadline, when set, is the context's deadline for the generation.
	Deadline time.Duration
	// Want is the error's outcome. Refusals, Timeouts, BadKey and GiveUp
	// set the flags themselves, and the message when Want has none.
	Want   Outcome
	Is     error    // errors.Is(err, Is) when set
	Causes []string // each is in the error's cause (ModelError.Err)
	Hides  []string // none is anywhere in the error (as the key is not)
	Calls  []string // the kinds of the calls the fake received
	Waits  []Wait   // the waits on the clock; nil: none
	Check  func(t *testing.T, f F)
}

// Outcome is what a *imagegen.ModelError tells its caller.
type Outcome struct {
	Retryable, Refused, InvalidInput, Misconfigured bool
	Message                                         string
}

// Unplannable is a request the adapter must refuse at Plan.
type Unplannable[C any] struct {
	Name    string
	Config  C
	Request imagegen.Request
	Field   string // ValidationError.Field
	Message string // ValidationError.Message
	// Unplanned is the outcome of Generate's error when the request
	// comes to it unplanned.
	Unplanned Outcome
}

// Ratios is a table of what the adapter sends and makes for every
// aspect ratio (and auto), for one config.
type Ratios[F, C any] struct {
	Name   string
	Config C
	// Sent is what the adapter sent for the ratio (a size, a ratio, a
	// preset) in f's latest request: Run asks for the ratios one after
	// the other, on one fake.
	Sent func(t *testing.T, f F) string
	// Table has a row for every ratio and auto: the ratio, what the
	// adapter sends for it (as Sent reads it, one word), and the size of
	// the image it makes, as in
	//
	//	auto   1:1   1024x1024
	//	16:9   16:9  1344x756   # 1344x768 cropped
	//
	// Text from # to the end of a line is a comment.
	Table string
}

// Wait is a wait on the clock within Min and Max.
type Wait struct{ Min, Max time.Duration }

// Waits are waits of exactly ds.
func Waits(ds ...time.Duration) []Wait {
	out := make([]Wait, len(ds))
	for i, d := range ds {
		out[i] = Wait{d, d}
	}
	return out
}

// Backoff is the jittered wait before retry number n (0 for the first)
// with provider.Policy's default delays: the upper half of
// DefaultBaseDelay doubled per retry, capped at DefaultMaxDelay (the
// arithmetic Do's backoff shares, without its jitter).
func Backoff(n int) Wait {
	d := retry.Backoff(n, provider.DefaultBaseDelay, provider.DefaultMaxDelay, false)
	return Wait{d / 2, d}
}
