package stability

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
)

// generateResponse is the answer to accept: application/json.
type generateResponse struct {
	Image        []byte `json:"image"` // base64, decoded by encoding/json from the answer's bytes
	FinishReason string `json:"finish_reason"`
	// Seed is the seed the image was made with: the one sent, or the
	// one drawn for 0, which the API reads as "random".
	Seed *int64 `json:"seed"`
}

// msgFiltered is what the user reads of a CONTENT_FILTERED answer.
const msgFiltered = "the generated image was blocked by the provider's content filter"

// answerImage reads the picture of an answer:
//
//	finish_reason SUCCESS (or none) with an image   the image
//	finish_reason CONTENT_FILTERED (HTTP 200)       refused: the image came back blurred
//	any other finish_reason, or no image            failed, retryable
func answerImage(resp *provider.Response) (imagegen.GeneratedImage, error) {
	var body generateResponse
	if err := provider.DecodeJSON(Provider, resp, &body); err != nil {
		return imagegen.GeneratedImage{}, err
	}
	switch body.FinishReason {
	case "SUCCESS", "":
	case "CONTENT_FILTERED":
		return imagegen.GeneratedImage{}, provider.NewError(Provider, resp.Status, fmt.Sprintf("finish_reason CONTENT_FILTERED (seed %s)", seedText(body.Seed)),
			provider.Refusal(msgFiltered), provider.Code("CONTENT_FILTERED"))
	default:
		return imagegen.GeneratedImage{}, provider.BadAnswer(Provider, true, fmt.Errorf("HTTP %d: finish_reason %q", resp.Status, body.FinishReason))
	}
	if len(body.Image) == 0 {
		return imagegen.GeneratedImage{}, provider.BadAnswer(Provider, true, errors.New("the answer holds no image"))
	}
	img, err := provider.AnsweredImage(Provider, "image", body.Image)
	if err != nil {
		return imagegen.GeneratedImage{}, err
	}
	img.Seed = body.Seed // the service records it when it is not the task's (a task's 0)
	return img, nil
}

// seedText is an answer's seed for a logged cause: the number, or "none".
func seedText(s *int64) string {
	if s == nil {
		return "none"
	}
	return strconv.FormatInt(*s, 10)
}
