package imagegentest

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"sync"

	"github.com/imagegen/imagegen"
)

var _ imagegen.Model = (*Model)(nil)

// Step is one scripted outcome of Model.Generate.
type Step func(ctx context.Context, g imagegen.Generation) ([]imagegen.GeneratedImage, error)

// Model is a scripted model: each Generate call runs the next Step, and
// succeeds with a 1x1 PNG once the script is used up. It records every
// call. It is safe for concurrent use.
type Model struct {
	name   string
	cost   int64
	seeded bool

	mu    sync.Mutex
	steps []Step
	calls []imagegen.Generation
}

// NewModel returns a model named "scripted" that costs cost credits and
// runs steps in order.
func NewModel(cost int64, steps ...Step) *Model {
	return &Model{name: "scripted", cost: cost, steps: steps}
}

// Then appends steps to the script.
func (m *Model) Then(steps ...Step) *Model {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.steps = append(m.steps, steps...)
	return m
}

// TakesSeeds makes the model's plans say that it honours seeds
// (Plan.Seeded), so that tasks record one.
func (m *Model) TakesSeeds() *Model {
	m.seeded = true
	return m
}

// Calls returns the generations run so far.
func (m *Model) Calls() []imagegen.Generation {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]imagegen.Generation(nil), m.calls...)
}

// Plan prices every request at the model's cost.
func (m *Model) Plan(imagegen.Request) (imagegen.Plan, error) {
	return imagegen.Plan{Model: m.name, Cost: m.cost, Seeded: m.seeded}, nil
}

// Generate runs the next step of the script.
func (m *Model) Generate(ctx context.Context, g imagegen.Generation) ([]imagegen.GeneratedImage, error) {
	m.mu.Lock()
	m.calls = append(m.calls, g)
	step := Succeed()
	if len(m.steps) > 0 {
		step, m.steps = m.steps[0], m.steps[1:]
	}
	m.mu.Unlock()
	return step(ctx, g)
}

// Succeed returns one 1x1 PNG.
func Succeed() Step {
	return func(context.Context, imagegen.Generation) ([]imagegen.GeneratedImage, error) {
		return []imagegen.GeneratedImage{{ContentType: "image/png", Data: TinyPNG()}}, nil
	}
}

// SucceedWithSeed returns one 1x1 PNG that the model reports it made
// with seed (GeneratedImage.Seed), as a provider that answers the seed
// it used does.
func SucceedWithSeed(seed int64) Step {
	return func(context.Context, imagegen.Generation) ([]imagegen.GeneratedImage, error) {
		return []imagegen.GeneratedImage{{ContentType: "image/png", Data: TinyPNG(), Seed: &seed}}, nil
	}
}

// Fail returns err.
func Fail(err error) Step {
	return func(context.Context, imagegen.Generation) ([]imagegen.GeneratedImage, error) {
		return nil, err
	}
}

// Block waits until release is closed (then succeeds) or ctx ends (then
// fails with a retryable error). started, if not nil, is closed when the
// step begins, so a test knows the generation is running.
func Block(started chan<- struct{}, release <-chan struct{}) Step {
	return func(ctx context.Context, g imagegen.Generation) ([]imagegen.GeneratedImage, error) {
		if started != nil {
			close(started)
		}
		select {
		case <-release:
			return Succeed()(ctx, g)
		case <-ctx.Done():
			return nil, &imagegen.ModelError{Provider: "scripted", Retryable: true, Err: ctx.Err()}
		}
	}
}

// TinyPNG returns the bytes of a 1x1 PNG.
func TinyPNG() []byte {
	var buf bytes.Buffer
	_ = png.Encode(&buf, image.NewGray(image.Rect(0, 0, 1, 1)))
	return buf.Bytes()
}
