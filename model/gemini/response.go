package gemini

import (
	"cmp"
	"encoding/base64"
	"errors"
	"fmt"
	"mime"
	"strings"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
)

// generateResponse is the answer (GenerateContentResponse).
type generateResponse struct {
	Candidates     []candidate `json:"candidates"`
	PromptFeedback *struct {
		BlockReason string `json:"blockReason"`
	} `json:"promptFeedback"`
	ModelVersion string `json:"modelVersion"`
	ResponseID   string `json:"responseId"`
}

type candidate struct {
	Content *struct {
		Parts []part `json:"parts"`
	} `json:"content"`
	FinishReason  string `json:"finishReason"`
	FinishMessage string `json:"finishMessage"`
}

// User messages of the failures Gemini answers with HTTP 200.
const (
	msgRecitation = "the image provider declined because the result would resemble existing protected content"
	msgNoImage    = "the image model did not produce an image for this prompt; try rephrasing it"
	msgGlitch     = "the image model did not return an image, please retry later"
)

// refusals are the finish reasons that mean the content was refused.
func refusal(reason string) (string, bool) {
	switch reason {
	case "SAFETY", "IMAGE_SAFETY", "PROHIBITED_CONTENT", "IMAGE_PROHIBITED_CONTENT", "BLOCKLIST", "SPII":
		return provider.MsgRefused, true
	case "RECITATION", "IMAGE_RECITATION":
		return msgRecitation, true
	}
	return "", false
}

// images reads the pictures of an answer. The answers without one
// (all HTTP 200) fail:
//
//	promptFeedback.blockReason set                        refused
//	finishReason SAFETY, IMAGE_SAFETY, PROHIBITED_CONTENT,
//	  IMAGE_PROHIBITED_CONTENT, BLOCKLIST, SPII,
//	  RECITATION, IMAGE_RECITATION                        refused
//	no image, finishReason NO_IMAGE, STOP (text only),
//	  MAX_TOKENS or LANGUAGE                              failed, not retried: the same prompt
//	                                                      would most likely get the same answer
//	no image, any other reason (IMAGE_OTHER, OTHER, tool
//	  calls, none), or no candidate at all                failed, retryable: a glitch
//
// An answer of more than provider.MaxAnswerImages image parts is a bad
// answer, not retried, before any is decoded.
func images(resp *provider.Response) ([]imagegen.GeneratedImage, error) {
	var body generateResponse
	if err := provider.DecodeJSON(Provider, resp, &body); err != nil {
		return nil, err
	}
	if pf := body.PromptFeedback; pf != nil && pf.BlockReason != "" && pf.BlockReason != "BLOCK_REASON_UNSPECIFIED" {
		return nil, answered(fmt.Sprintf("promptFeedback.blockReason %s", pf.BlockReason), provider.Refusal(), provider.Code(pf.BlockReason))
	}
	if len(body.Candidates) == 0 {
		return nil, provider.BadAnswer(Provider, true, errors.New("HTTP 200: no candidates and no block reason"))
	}
	c := body.Candidates[0]
	if msg, ok := refusal(c.FinishReason); ok {
		return nil, answered("finishReason "+c.FinishReason, provider.Refusal(msg), provider.Code(c.FinishReason))
	}
	var imgs []imagegen.GeneratedImage
	var text []string
	if c.Content != nil {
		if err := provider.CheckAnswerImages(Provider, "candidates[0].content.parts", imageParts(c.Content.Parts)); err != nil {
			return nil, err
		}
		for i, p := range c.Content.Parts {
			switch {
			case isImagePart(p):
				img, err := inlineImage(i, p.InlineData)
				if err != nil {
					return nil, err
				}
				imgs = append(imgs, img)
			case p.Text != "" && !p.Thought: // thinking is not the answer
				text = append(text, p.Text)
			}
		}
	}
	if len(imgs) > 0 {
		return imgs, nil
	}
	cause := fmt.Sprintf("finishReason %s with no image", cmp.Or(c.FinishReason, "(none)"))
	if len(text) > 0 {
		cause += "; text: " + provider.Snippet([]byte(strings.Join(text, " ")))
	}
	switch c.FinishReason {
	case "NO_IMAGE", "STOP", "MAX_TOKENS", "LANGUAGE":
		return nil, answered(cause, provider.Retry(false), provider.UserMessage(msgNoImage), provider.Code(c.FinishReason))
	}
	return nil, answered(cause, provider.Retry(true), provider.UserMessage(msgGlitch), provider.Code(c.FinishReason))
}

// imageParts counts the parts images reads as pictures: each would be
// an image of the task, its bytes stored all at once, so an answer of
// more than provider.MaxAnswerImages is refused before any is decoded.
func imageParts(parts []part) int {
	n := 0
	for _, p := range parts {
		if isImagePart(p) {
			n++
		}
	}
	return n
}

// isImagePart reports whether p is a picture of the answer: inline data
// of an image type, not a thought (thinking is not the answer).
func isImagePart(p part) bool {
	return !p.Thought && p.InlineData != nil && isImage(p.InlineData.MimeType)
}

// answered is a failure that came as an HTTP 200 answer.
func answered(cause string, opts ...provider.ErrorOption) *imagegen.ModelError {
	return provider.NewError(Provider, 200, cause, opts...)
}

// inlineImage is the picture of parts[i].inlineData: of the type its
// bytes name (AnsweredImage), else of the media type it declares when
// that is HEIC or HEIF, which net/http cannot tell; but empty data,
// data that is not the PNG, JPEG or GIF it declares, and any other
// declared type is a retryable BadAnswer. The service serves an image
// under the type it was stored with, from its own origin: a declared
// image/svg+xml kept as it was would be a document of the service's,
// scripts and all, not a picture.
func inlineImage(i int, b *blob) (imagegen.GeneratedImage, error) {
	what := fmt.Sprintf("parts[%d].inlineData.data", i)
	data, err := decodeBase64(b.Data)
	if err != nil {
		return imagegen.GeneratedImage{}, provider.BadAnswer(Provider, true, fmt.Errorf("%s: %w", what, err))
	}
	if len(data) == 0 {
		return imagegen.GeneratedImage{}, provider.BadAnswer(Provider, true, fmt.Errorf("%s is empty", what))
	}
	if provider.ContentType(data) != "" {
		return provider.AnsweredImage(Provider, what, data)
	}
	mt, _, _ := mime.ParseMediaType(b.MimeType) // isImage: it parses
	switch mt {
	case provider.HEIC, provider.HEIF:
		return imagegen.GeneratedImage{ContentType: mt, Data: data}, nil
	case provider.PNG, provider.JPEG, provider.GIF, provider.WebP:
		return imagegen.GeneratedImage{}, provider.BadAnswer(Provider, true, fmt.Errorf("%s is not the %s it declares", what, mt))
	}
	return imagegen.GeneratedImage{}, provider.BadAnswer(Provider, true, fmt.Errorf("%s is of type %q, not an image type the service keeps", what, mt))
}

func isImage(mimeType string) bool {
	mt, _, err := mime.ParseMediaType(mimeType)
	return err == nil && strings.HasPrefix(mt, "image/")
}

// decodeBase64 takes every base64 form proto3 JSON allows.
func decodeBase64(s string) ([]byte, error) {
	var first error
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		data, err := enc.DecodeString(s)
		if err == nil {
			return data, nil
		}
		if first == nil {
			first = err
		}
	}
	return nil, first
}
