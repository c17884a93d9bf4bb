package openai

import (
	"bytes"
	"fmt"
	"mime/multipart"
	"net/textproto"
	"strings"

	"github.com/imagegen/imagegen/model/provider"
)

// generationRequest is the JSON body of POST /images/generations
// (CreateImageRequest).
type generationRequest struct {
	Model          string `json:"model"`
	Prompt         string `json:"prompt"`
	N              int    `json:"n"`
	Size           string `json:"size"`
	Quality        string `json:"quality,omitempty"`
	ResponseFormat string `json:"response_format,omitempty"` // dall-e only
	OutputFormat   string `json:"output_format,omitempty"`   // GPT image models only
}

// build returns the call for a generation: JSON generations without
// references, multipart edits with them.
func (m *Model) build(prompt string, size provider.Size, refs []provider.Reference) (provider.BuildFunc, error) {
	if len(refs) == 0 {
		body := generationRequest{Model: m.cfg.Model, Prompt: prompt, N: 1, Size: size.String(), Quality: m.cfg.Quality}
		if m.family.gptImage {
			body.OutputFormat = "png"
		} else {
			body.ResponseFormat = "b64_json" // no URL to download, no 60-minute expiry
		}
		return provider.PostJSON(m.client.URL("/images/generations"), body, m.header())
	}
	body, contentType, err := m.editBody(prompt, size, refs)
	if err != nil {
		return nil, err
	}
	return provider.Post(m.client.URL("/images/edits"), contentType, body, m.header()), nil
}

// editBody is the multipart/form-data body of POST /images/edits
// (CreateImageEditRequest): the fields, then one image[] part per
// reference, in order.
func (m *Model) editBody(prompt string, size provider.Size, refs []provider.Reference) ([]byte, string, error) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	fields := [][2]string{{"model", m.cfg.Model}, {"prompt", prompt}, {"n", "1"}, {"size", size.String()}}
	if m.cfg.Quality != "" {
		fields = append(fields, [2]string{"quality", m.cfg.Quality})
	}
	if m.family.gptImage {
		fields = append(fields, [2]string{"output_format", "png"})
	}
	for _, f := range fields {
		if err := w.WriteField(f[0], f[1]); err != nil {
			return nil, "", fmt.Errorf("writing field %s: %w", f[0], err)
		}
	}
	for i, ref := range refs {
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="image[]"; filename="image-%d.%s"`, i, extension(ref.ContentType)))
		h.Set("Content-Type", ref.ContentType)
		part, err := w.CreatePart(h)
		if err != nil {
			return nil, "", fmt.Errorf("writing image %d: %w", i, err)
		}
		if _, err := part.Write(ref.Data); err != nil {
			return nil, "", fmt.Errorf("writing image %d: %w", i, err)
		}
	}
	if err := w.Close(); err != nil {
		return nil, "", fmt.Errorf("closing the form: %w", err)
	}
	return buf.Bytes(), w.FormDataContentType(), nil
}

func extension(contentType string) string {
	switch ext := strings.TrimPrefix(contentType, "image/"); ext {
	case "jpeg":
		return "jpg"
	case "png", "webp":
		return ext
	}
	return "bin"
}
