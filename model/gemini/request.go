package gemini

import (
	"encoding/base64"
	"fmt"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
)

// The request body of models/{model}:generateContent
// (GenerateContentRequest in proto3 JSON: lowerCamelCase names, bytes as
// standard base64).
type generateRequest struct {
	Contents         []content        `json:"contents"`
	GenerationConfig generationConfig `json:"generationConfig"`
}

type content struct {
	Role  string `json:"role,omitempty"`
	Parts []part `json:"parts"`
}

type part struct {
	Text       string `json:"text,omitempty"`
	InlineData *blob  `json:"inlineData,omitempty"`
	Thought    bool   `json:"thought,omitempty"`
}

type blob struct {
	MimeType string `json:"mimeType"`
	Data     string `json:"data"` // base64
}

type generationConfig struct {
	ResponseModalities []string     `json:"responseModalities"`
	ImageConfig        *imageConfig `json:"imageConfig,omitempty"`
}

type imageConfig struct {
	AspectRatio string `json:"aspectRatio,omitempty"`
	ImageSize   string `json:"imageSize,omitempty"`
}

// request is the body for req: the prompt, then each reference inline;
// IMAGE (with TEXT, which every Gemini image model takes) as the answer's
// modalities; the aspect ratio, except for auto with references, where
// the model follows them.
func (m *Model) request(req imagegen.Request, refs []provider.Reference) generateRequest {
	parts := []part{{Text: req.Prompt}}
	for _, r := range refs {
		parts = append(parts, part{InlineData: &blob{MimeType: r.ContentType, Data: base64.StdEncoding.EncodeToString(r.Data)}})
	}
	ic := imageConfig{ImageSize: m.cfg.ImageSize}
	switch {
	case req.AspectRatio != "" && req.AspectRatio != imagegen.AspectAuto:
		ic.AspectRatio = string(req.AspectRatio)
	case len(refs) == 0:
		ic.AspectRatio = string(imagegen.Aspect1x1) // auto, text-to-image
	}
	body := generateRequest{
		Contents:         []content{{Role: "user", Parts: parts}},
		GenerationConfig: generationConfig{ResponseModalities: []string{"TEXT", "IMAGE"}},
	}
	if ic != (imageConfig{}) {
		body.GenerationConfig.ImageConfig = &ic
	}
	return body
}

// maxInlineBytes bounds the base64 of the reference images: a request
// must stay under about 20 MB (Google's limit on inline data), or use
// the Files API, which this adapter does not.
const maxInlineBytes = 19 << 20

// checkInline fails, as invalid input, references too large to send
// inline together.
func checkInline(refs []provider.Reference) error {
	total := 0
	for _, r := range refs {
		total += base64.StdEncoding.EncodedLen(len(r.Data))
	}
	if total <= maxInlineBytes {
		return nil
	}
	return &imagegen.ModelError{Provider: Provider, InvalidInput: true,
		Message: "the reference images are too large together for this provider (at most about 14 MB in all)",
		Err:     fmt.Errorf("%d bytes of base64 inline data, at most %d", total, maxInlineBytes)}
}
