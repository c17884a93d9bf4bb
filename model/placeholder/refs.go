package placeholder

import (
	"context"
	"errors"
	"fmt"
	"image"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/fetch"
)

// reference is a fetched reference image, checked on its header and not
// yet decoded: only one reference of a task is ever decoded at a time
// (see drawReferences).
type reference struct {
	data []byte
	size image.Point // from the header
}

// references fetches the reference images all at once (fetch.All: the
// set within the fetcher's Timeout) and checks each header against the
// fetcher's pixel and decoded-size limits, decoding none of them.
func (m *Model) references(ctx context.Context, urls []string) ([]reference, error) {
	if len(urls) == 0 {
		return nil, nil
	}
	if m.o.Fetcher == nil {
		return nil, &imagegen.ModelError{Provider: Name, InvalidInput: true,
			Message: "reference images are unavailable on this server", Err: errors.New("no ReferenceFetcher configured")}
	}
	refs := make([]reference, len(urls))
	i, err := fetch.All(ctx, len(urls), func(ctx context.Context, i int) error {
		data, _, err := m.o.Fetcher.Fetch(ctx, urls[i])
		if err != nil {
			return err
		}
		cfg, _, err := m.o.Fetcher.DecodeConfig(data)
		if err != nil {
			return err
		}
		refs[i] = reference{data: data, size: image.Pt(cfg.Width, cfg.Height)}
		return nil
	})
	if err != nil {
		if ctx.Err() != nil { // the generation was stopped, not the image's fault
			return nil, interrupted(ctx)
		}
		return nil, referenceError(i, err)
	}
	return refs, nil
}

// drawReferences decodes the references one at a time, draws each into
// its tile along the bottom of img, and lets it go before the next, so a
// task holds at most one decoded reference (at most the fetcher's
// MaxDecodedBytes) besides the fetched bytes.
func (m *Model) drawReferences(img *image.NRGBA, refs []reference) error {
	for i := range refs {
		src, _, err := m.o.Fetcher.Decode(refs[i].data)
		if err != nil {
			return referenceError(i, err)
		}
		refs[i].data = nil
		scaleInto(img, tileOf(img, i, len(refs)), src)
	}
	return nil
}

// referenceError says, safely for the user, why reference i cannot be
// used. Every such failure is the user's input and fails the task at
// once, not retried, as the provider adapters' references do: a host's
// 5xx or 429 too, since a host of the user's choosing that holds each
// fetch to its timeout and then answers 503 would hold a worker for
// every attempt, each refunded.
func referenceError(i int, err error) *imagegen.ModelError {
	reason := refusal(err)
	var status *fetch.StatusError
	switch {
	case fetch.TimedOut(err):
		reason = "timed out while downloading"
	case errors.As(err, &status):
		reason = fmt.Sprintf("could not be downloaded (HTTP %d)", status.Code)
	}
	return &imagegen.ModelError{
		Provider:     Name,
		InvalidInput: true,
		Message:      fmt.Sprintf("image_input[%d] could not be used: %s", i, reason),
		Err:          err,
	}
}

// refusal is the user's reason for a fetcher's refusal of a reference
// (one of its sentinel errors), or "could not be downloaded".
func refusal(err error) string {
	for _, r := range []struct {
		err    error
		reason string
	}{
		{fetch.ErrBlockedAddress, "address not allowed"},
		{fetch.ErrTooLarge, "too large"},
		{fetch.ErrTooManyPixels, "too many pixels"},
		{fetch.ErrNotImage, "not a supported image"},
		{fetch.ErrTooManyRedirects, "too many redirects"},
		{fetch.ErrBadURL, "not an http or https URL"},
	} {
		if errors.Is(err, r.err) {
			return r.reason
		}
	}
	return "could not be downloaded"
}
