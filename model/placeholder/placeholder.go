// Package placeholder is a real, local imagegen.Model for development,
// demos and tests: it draws a PNG that depends only on its input.
//
//   - Size: the long side is Options.LongSide (default 1024), the short
//     side follows the aspect ratio (16:9 gives 1024x576). auto is 1:1
//     for text-to-image and the nearest allowed ratio of the first
//     reference image for image-to-image.
//   - Picture: a gradient and shapes whose colours and places come from a
//     hash of the prompt; for image-to-image, the reference images
//     (fetched through the guarded fetcher) are drawn in as a strip of
//     tiles along the bottom. The same input gives the same bytes.
//   - Refusal: a prompt holding a term of Options.BlockList (default
//     "nsfw", any case) fails as a content-policy refusal, before any
//     delay or fetch.
//   - Cost: Options.Cost credits (default 1); Delay: how long a picture
//     takes, waited on the injected clock.
package placeholder

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"image"
	"strings"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/fetch"
)

// Name is the model name recorded on the tasks it runs.
const Name = "placeholder"

var _ imagegen.Model = (*Model)(nil)

// ImageFetcher fetches and decodes a reference image; *fetch.Fetcher is one.
type ImageFetcher interface {
	Image(ctx context.Context, url string) (image.Image, string, error)
}

// Options configures the placeholder model. Zero values take defaults.
type Options struct {
	LongSide  int            // pixels on the long side, 16 to 4096; default 1024
	Delay     time.Duration  // time per picture; default 0
	Cost      int64          // credits per picture, 1 to 3; default 1
	BlockList []string       // refused terms; nil means {"nsfw"}, empty means none
	Fetcher   ImageFetcher   // for image-to-image; without one such tasks fail
	Clock     imagegen.Clock // default imagegen.SystemClock
}

// Model is the placeholder model. It is safe for concurrent use.
type Model struct {
	o       Options
	blocked []string // lower-cased
}

// New returns a placeholder model, or an error naming a bad option.
func New(o Options) (*Model, error) {
	o.LongSide = cmp.Or(o.LongSide, 1024)
	o.Cost = cmp.Or(o.Cost, 1)
	switch {
	case o.LongSide < 16 || o.LongSide > 4096:
		return nil, fmt.Errorf("placeholder: Options.LongSide must be 16 to 4096 (got %d)", o.LongSide)
	case o.Cost < imagegen.MinCost || o.Cost > imagegen.MaxCost:
		return nil, fmt.Errorf("placeholder: Options.Cost must be %d to %d (got %d)", imagegen.MinCost, imagegen.MaxCost, o.Cost)
	case o.Delay < 0:
		return nil, fmt.Errorf("placeholder: Options.Delay must not be negative (got %v)", o.Delay)
	}
	if o.BlockList == nil {
		o.BlockList = []string{"nsfw"}
	}
	if o.Clock == nil {
		o.Clock = imagegen.SystemClock{}
	}
	m := &Model{o: o}
	for _, term := range o.BlockList {
		if term = strings.ToLower(strings.TrimSpace(term)); term != "" {
			m.blocked = append(m.blocked, term)
		}
	}
	return m, nil
}

// Plan always chooses this model at its configured cost.
func (m *Model) Plan(imagegen.Request) (imagegen.Plan, error) {
	return imagegen.Plan{Model: Name, Cost: m.o.Cost}, nil
}

// Generate draws one PNG for g.
func (m *Model) Generate(ctx context.Context, g imagegen.Generation) ([]imagegen.GeneratedImage, error) {
	prompt := strings.ToLower(g.Request.Prompt)
	for _, term := range m.blocked {
		if strings.Contains(prompt, term) {
			return nil, &imagegen.ModelError{Provider: Name, Refused: true, Message: "the prompt contains a blocked term"}
		}
	}
	refs, err := m.references(ctx, g.Request.ImageInput)
	if err != nil {
		return nil, err
	}
	if m.o.Delay > 0 {
		select {
		case <-m.o.Clock.After(m.o.Delay):
		case <-ctx.Done():
			return nil, &imagegen.ModelError{Provider: Name, Retryable: true, Message: "generation interrupted", Err: ctx.Err()}
		}
	}
	ratio := g.Request.AspectRatio
	if ratio == "" || ratio == imagegen.AspectAuto {
		ratio = imagegen.Aspect1x1
		if len(refs) > 0 {
			b := refs[0].Bounds()
			ratio = imagegen.NearestAspectRatio(b.Dx(), b.Dy())
		}
	}
	w, h := size(ratio, m.o.LongSide)
	data, err := encodePNG(draw(g.Request.Prompt, w, h, refs))
	if err != nil {
		return nil, &imagegen.ModelError{Provider: Name, Message: "could not encode the image", Err: err}
	}
	return []imagegen.GeneratedImage{{ContentType: "image/png", Data: data}}, nil
}

// references fetches the reference images, in order.
func (m *Model) references(ctx context.Context, urls []string) ([]image.Image, error) {
	if len(urls) == 0 {
		return nil, nil
	}
	if m.o.Fetcher == nil {
		return nil, &imagegen.ModelError{Provider: Name, InvalidInput: true, Message: "reference images are not available on this server"}
	}
	refs := make([]image.Image, 0, len(urls))
	for i, u := range urls {
		img, _, err := m.o.Fetcher.Image(ctx, u)
		if err != nil {
			return nil, referenceError(i, err)
		}
		refs = append(refs, img)
	}
	return refs, nil
}

// referenceError says, safely for the user, why reference i is unusable.
// A timeout may pass on a later attempt; the rest will not.
func referenceError(i int, err error) error {
	reason := "could not be downloaded"
	for _, known := range []error{fetch.ErrBlockedAddress, fetch.ErrTooLarge, fetch.ErrTooManyPixels, fetch.ErrNotImage, fetch.ErrTooManyRedirects, fetch.ErrBadURL, fetch.ErrStatus} {
		if errors.Is(err, known) {
			reason = known.Error()
		}
	}
	timeout := errors.Is(err, context.DeadlineExceeded)
	if timeout {
		reason = "timed out while downloading"
	}
	return &imagegen.ModelError{
		Provider:     Name,
		Retryable:    timeout,
		InvalidInput: !timeout,
		Message:      fmt.Sprintf("image_input[%d] could not be used: %s", i, reason),
		Err:          err,
	}
}

// size is the picture's size for ratio with the given long side.
func size(ratio imagegen.AspectRatio, long int) (w, h int) {
	rw, rh := ratio.Size()
	if rw >= rh {
		return long, max(1, (long*rh+rw/2)/rw)
	}
	return max(1, (long*rw+rh/2)/rh), long
}
