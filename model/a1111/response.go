package a1111

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
)

// response is the answer of txt2img and img2img (TextToImageResponse,
// ImageToImageResponse): base64 images, the parameters echoed, and
// info, a JSON document in a string, whose seed is the one used.
type response struct {
	Images []string `json:"images"`
	Info   string   `json:"info"`
}

// info is what the adapter reads of response.info.
type info struct {
	Seed *int64 `json:"seed"`
}

// images decodes the answer's first image (batch_size 1 makes one; an
// extension may add more, such as a control map, after it), with the
// seed the server used from info (GeneratedImage.Seed: the service
// records it on the task when it is not the task's).
func (m *Model) images(resp *provider.Response) ([]imagegen.GeneratedImage, error) {
	var r response
	if err := provider.DecodeJSON(Provider, resp, &r); err != nil {
		return nil, err
	}
	if len(r.Images) == 0 {
		return nil, provider.BadAnswer(Provider, true, errors.New("the answer holds no image"))
	}
	raw := r.Images[0]
	if _, after, ok := strings.Cut(raw, ";base64,"); ok && strings.HasPrefix(raw, "data:") {
		raw = after
	}
	data, err := base64.StdEncoding.DecodeString(raw)
	if err != nil {
		return nil, provider.BadAnswer(Provider, true, fmt.Errorf("images[0] is not base64: %w", err))
	}
	img, err := provider.AnsweredImage(Provider, "images[0]", data)
	if err != nil {
		return nil, err
	}
	var in info
	if err := json.Unmarshal([]byte(r.Info), &in); err != nil || in.Seed == nil {
		m.cfg.Logger.Debug("a1111: the answer's info names no seed; the task keeps its own", "info", provider.Snippet([]byte(r.Info)))
	}
	img.Seed = in.Seed
	return []imagegen.GeneratedImage{img}, nil
}
