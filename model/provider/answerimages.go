package provider

import (
	"fmt"

	"github.com/imagegen/imagegen"
)

// MaxAnswerImages is the most pictures an adapter takes from one
// answer. A task is one generation, for which providers answer one
// picture or a few variants; an answer that lists more (a provider's
// fault, or a self-hosted server's odd setup) is refused before any of
// them is downloaded, since each download holds the worker for up to
// the fetcher's Timeout and its bytes in memory until the task is
// stored, and nothing else bounds how many an answer may list. It is
// imagegen.MaxTaskImages, the most the service keeps from any model.
const MaxAnswerImages = imagegen.MaxTaskImages

// CheckAnswerImages is the error of an answer whose list what holds n
// pictures, more than MaxAnswerImages (nil when it holds no more): a
// BadAnswer, not retryable, as the same request would get the same
// answer.
func CheckAnswerImages(provider, what string, n int) error {
	if n <= MaxAnswerImages {
		return nil
	}
	return BadAnswer(provider, false, fmt.Errorf("%s lists %d pictures, more than the %d an answer may hold", what, n, MaxAnswerImages))
}
