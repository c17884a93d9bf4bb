// Package placeholder is a real, local imagegen.Model for development,
// demos and tests: it draws a PNG that depends only on its input.
//
//   - Size: the long side is Config.LongSide (default 1024), the short
//     side follows the aspect ratio (16:9 gives 1024x576). auto is 1:1
//     for text-to-image and the nearest allowed ratio of the first
//     reference image for image-to-image.
//   - Picture: a gradient, rings and bars whose colours and places come
//     from a hash of the prompt (and of the seed, when the request has
//     one); for image-to-image the reference images (fetched through
//     Config.Fetcher, all at once) are drawn in as a strip of tiles along
//     the bottom. The same input (prompt, seed, ratio, references) gives
//     the same bytes.
//   - Memory: references are checked on their headers (the fetcher's
//     MaxPixels and MaxDecodedBytes) before any is decoded, then decoded
//     one at a time, each drawn into its tile and dropped before the
//     next: a task holds its references' fetched bytes (at most eight
//     times the fetcher's MaxBytes) and one decoded image (at most its
//     MaxDecodedBytes). See fetch.Config.
//   - Refusal: a prompt holding a term of Config.BlockList (default
//     "nsfw", any case) fails as a content-policy refusal, before any
//     fetch or delay.
//   - Cost: Config.Cost credits (default 1). Delay: how long a picture
//     takes, waited on the injected clock.
package placeholder

import (
	"cmp"
	"context"
	"fmt"
	"image"
	"strings"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/fetch"
)

// Name is the model name recorded on the tasks it runs and the Provider
// of its errors.
const Name = "placeholder"

var _ imagegen.Model = (*Model)(nil)

// ReferenceFetcher fetches reference images (fetch.ImageFetcher) and
// decodes them under the fetcher's limits; *fetch.Fetcher is one.
// DecodeConfig checks an image's header against the same limits as
// Decode (pixels, decoded size) without decoding it.
type ReferenceFetcher interface {
	fetch.ImageFetcher
	DecodeConfig(data []byte) (image.Config, string, error)
	Decode(data []byte) (image.Image, string, error)
}

// Config configures the placeholder model. Zero values take defaults.
type Config struct {
	LongSide  int              // pixels on the long side, 16 to 4096; default 1024
	Delay     time.Duration    // simulated generation time; default 0
	Cost      int64            // credits per picture, imagegen.MinCost to MaxCost; default 1
	BlockList []string         // refused terms, any case; nil means {"nsfw"}, empty means none
	Fetcher   ReferenceFetcher // for image-to-image; without one such tasks fail
	Clock     imagegen.Clock   // default imagegen.SystemClock{}
}

func (o Config) withDefaults() Config {
	o.LongSide = cmp.Or(o.LongSide, 1024)
	o.Cost = cmp.Or(o.Cost, 1)
	if o.BlockList == nil {
		o.BlockList = []string{"nsfw"}
	}
	if o.Clock == nil {
		o.Clock = imagegen.SystemClock{}
	}
	return o
}

func (o Config) validate() error {
	switch {
	case o.LongSide < 16 || o.LongSide > 4096:
		return fmt.Errorf("placeholder: Config.LongSide must be 16 to 4096 (got %d)", o.LongSide)
	case o.Cost < imagegen.MinCost || o.Cost > imagegen.MaxCost:
		return fmt.Errorf("placeholder: Config.Cost must be %d to %d (got %d)", imagegen.MinCost, imagegen.MaxCost, o.Cost)
	case o.Delay < 0:
		return fmt.Errorf("placeholder: Config.Delay must not be negative (got %v)", o.Delay)
	}
	return nil
}

// Model is the placeholder model. It is safe for concurrent use.
type Model struct {
	o       Config
	blocked []string // lower-cased, non-empty terms
}

// New returns a placeholder model, or an error naming a bad option.
func New(o Config) (*Model, error) {
	o = o.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	m := &Model{o: o}
	for _, term := range o.BlockList {
		if term = strings.ToLower(strings.TrimSpace(term)); term != "" {
			m.blocked = append(m.blocked, term)
		}
	}
	return m, nil
}

// Plan always chooses this model at its configured cost. It refuses
// nothing: requests are validated before they reach a model. It honours
// seeds: the picture depends on the prompt and the seed.
func (m *Model) Plan(imagegen.Request) (imagegen.Plan, error) {
	return imagegen.Plan{Model: Name, Cost: m.o.Cost, Seeded: true}, nil
}

// Generate draws one PNG for g. Failures are *imagegen.ModelError.
func (m *Model) Generate(ctx context.Context, g imagegen.Generation) ([]imagegen.GeneratedImage, error) {
	if m.refuses(g.Request.Prompt) {
		return nil, &imagegen.ModelError{Provider: Name, Refused: true, Message: "the prompt contains a blocked term"}
	}
	ratio := g.Request.AspectRatio
	if w, _ := ratio.Size(); w == 0 && ratio != imagegen.AspectAuto && ratio != "" {
		return nil, &imagegen.ModelError{Provider: Name, Message: "unsupported aspect ratio", Err: fmt.Errorf("aspect ratio %q", ratio)}
	}
	refs, err := m.references(ctx, g.Request.ImageInput)
	if err != nil {
		return nil, err
	}
	if err := m.wait(ctx); err != nil {
		return nil, err
	}
	w, h := size(chooseRatio(ratio, refs), m.o.LongSide)
	img := draw(g.Request.Prompt, g.Request.Seed, w, h)
	if err := m.drawReferences(img, refs); err != nil {
		return nil, err
	}
	data, err := encodePNG(img)
	if err != nil {
		return nil, &imagegen.ModelError{Provider: Name, Message: "could not encode the image", Err: err}
	}
	return []imagegen.GeneratedImage{{ContentType: "image/png", Data: data}}, nil
}

// refuses reports whether prompt holds a blocked term, in any case.
func (m *Model) refuses(prompt string) bool {
	prompt = strings.ToLower(prompt)
	for _, term := range m.blocked {
		if strings.Contains(prompt, term) {
			return true
		}
	}
	return false
}

// wait takes Config.Delay on the clock, or stops when ctx ends.
func (m *Model) wait(ctx context.Context) error {
	if m.o.Delay <= 0 {
		return nil
	}
	select {
	case <-m.o.Clock.After(m.o.Delay):
		return nil
	case <-ctx.Done():
		return interrupted(ctx)
	}
}

// interrupted is the error of a generation whose context ended: the
// task may run again.
func interrupted(ctx context.Context) error {
	return &imagegen.ModelError{Provider: Name, Retryable: true, Message: "generation interrupted", Err: ctx.Err()}
}
