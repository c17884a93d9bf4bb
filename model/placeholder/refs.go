package placeholder

import (
	"context"
	"errors"
	"fmt"
	"image"
	"net/http"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/fetch"
)

// references fetches the reference images in order and stops at the
// first that cannot be used.
func (m *Model) references(ctx context.Context, urls []string) ([]image.Image, error) {
	if len(urls) == 0 {
		return nil, nil
	}
	if m.o.Fetcher == nil {
		return nil, &imagegen.ModelError{Provider: Name, InvalidInput: true,
			Message: "reference images are unavailable on this server", Err: errors.New("no ImageFetcher configured")}
	}
	refs := make([]image.Image, 0, len(urls))
	for i, u := range urls {
		img, _, err := m.o.Fetcher.Image(ctx, u)
		if err != nil {
			if ctx.Err() != nil { // the generation was stopped, not the image's fault
				return nil, interrupted(ctx)
			}
			return nil, referenceError(i, err)
		}
		refs = append(refs, img)
	}
	return refs, nil
}

// referenceError says, safely for the user, why reference i cannot be
// used. Timeouts and server-side (5xx, 429) answers may pass on a later
// attempt; the rest will not, and fail the task as invalid input.
func referenceError(i int, err error) *imagegen.ModelError {
	reason, retry := "could not be downloaded", false
	var status *fetch.StatusError
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		reason, retry = "timed out while downloading", true
	case errors.As(err, &status):
		reason = fmt.Sprintf("could not be downloaded (HTTP %d)", status.Code)
		retry = status.Code >= 500 || status.Code == http.StatusTooManyRequests
	case errors.Is(err, fetch.ErrBlockedAddress):
		reason = "address not allowed"
	case errors.Is(err, fetch.ErrTooLarge):
		reason = "too large"
	case errors.Is(err, fetch.ErrTooManyPixels):
		reason = "too many pixels"
	case errors.Is(err, fetch.ErrNotImage):
		reason = "not a supported image"
	case errors.Is(err, fetch.ErrTooManyRedirects):
		reason = "too many redirects"
	case errors.Is(err, fetch.ErrBadURL):
		reason = "not an http or https URL"
	}
	return &imagegen.ModelError{
		Provider:     Name,
		Retryable:    retry,
		InvalidInput: !retry,
		Message:      fmt.Sprintf("image_input[%d] could not be used: %s", i, reason),
		Err:          err,
	}
}
