package imagegen

import "fmt"

// checkImages is the error of an answer with no image, or with an
// image of no bytes, which a success would have stored (and charged
// for) as an empty download: a retryable *ModelError, as a provider's
// glitch is.
func checkImages(t *Task, imgs []GeneratedImage) error {
	if len(imgs) == 0 {
		return &ModelError{Provider: t.Model, Retryable: true, Message: "the model returned no image"}
	}
	for i, img := range imgs {
		if len(img.Data) == 0 {
			return &ModelError{Provider: t.Model, Retryable: true, Message: "the model returned an empty image",
				Err: fmt.Errorf("image %d of %d has no bytes", i, len(imgs))}
		}
	}
	return nil
}
