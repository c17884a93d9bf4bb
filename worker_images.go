package imagegen

import (
	"fmt"
	"net/http"
	"slices"
)

// checkImages checks a model's answer before it is stored, and returns
// its images under the types to store them with.
//
// An answer with no image, or with an image of no bytes, which a
// success would have stored (and charged for) as an empty download, is
// a retryable *ModelError, as a provider's glitch is. An answer of more
// than MaxTaskImages is not retryable: the model answers so again.
//
// Each image is stored under its declared type's bare media type when
// that is a safe one (SafeImageType), else under the type its bytes
// show when that is (a model that declares "" or
// application/octet-stream). Anything else is not an image (an HTML
// page, an SVG, garbage): the image origin would serve it as a document
// of its own. That *ModelError is not retryable: the model (often a
// user's own imagegen.Model) declares or makes what it does on every
// attempt, and each retry would pay the provider again for it; the task
// fails and is refunded at once.
func checkImages(t *Task, imgs []GeneratedImage) ([]GeneratedImage, error) {
	if len(imgs) == 0 {
		return nil, &ModelError{Provider: t.Model, Retryable: true, Message: "the model returned no image"}
	}
	if len(imgs) > MaxTaskImages {
		return nil, &ModelError{Provider: t.Model, Message: "the model returned more images than a task keeps",
			Err: fmt.Errorf("%d images, more than %d", len(imgs), MaxTaskImages)}
	}
	for i, img := range imgs {
		if len(img.Data) == 0 {
			return nil, &ModelError{Provider: t.Model, Retryable: true, Message: "the model returned an empty image",
				Err: fmt.Errorf("image %d of %d has no bytes", i, len(imgs))}
		}
	}
	checked := slices.Clone(imgs) // the model's own slice stays as it returned it
	for i, img := range checked {
		ct, ok := SafeImageType(img.ContentType)
		if !ok {
			ct = sniffImageType(img.Data)
		}
		if ct == "" {
			return nil, &ModelError{Provider: t.Model, Message: "the model returned something that is not an image",
				Err: fmt.Errorf("image %d of %d is declared %q and its bytes are %s, not an image type the service keeps",
					i, len(imgs), img.ContentType, http.DetectContentType(img.Data))}
		}
		checked[i].ContentType = ct
	}
	return checked, nil
}
