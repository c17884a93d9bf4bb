package openai

import (
	"context"
	"errors"
	"fmt"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
)

// imagesResponse is the answer of both endpoints (ImagesResponse).
type imagesResponse struct {
	Created int64 `json:"created"`
	Data    []struct {
		// B64JSON is decoded from base64 by encoding/json, straight from
		// the answer's bytes: no copy of the text is made.
		B64JSON []byte `json:"b64_json"`
		URL     string `json:"url"`
	} `json:"data"`
}

// images turns an answer into pictures of exactly ratio, each
// centre-cropped when its size is only near the ratio.
func (m *Model) images(ctx context.Context, resp *provider.Response, ratio imagegen.AspectRatio) ([]imagegen.GeneratedImage, error) {
	var body imagesResponse
	if err := provider.DecodeJSON(Provider, resp, &body); err != nil {
		return nil, err
	}
	if len(body.Data) == 0 {
		return nil, provider.BadAnswer(Provider, true, errors.New("the answer holds no image"))
	}
	if err := provider.CheckAnswerImages(Provider, "data", len(body.Data)); err != nil {
		return nil, err
	}
	out := make([]imagegen.GeneratedImage, 0, len(body.Data))
	for i, d := range body.Data {
		img, err := m.image(ctx, i, d.B64JSON, d.URL)
		if err != nil {
			return nil, err
		}
		out = append(out, img)
	}
	return provider.CropAll(Provider, out, ratio)
}

// image is one answered picture: base64, or a URL downloaded through the
// Fetcher.
func (m *Model) image(ctx context.Context, i int, data []byte, url string) (imagegen.GeneratedImage, error) {
	switch {
	case len(data) > 0:
		return provider.AnsweredImage(Provider, fmt.Sprintf("data[%d]", i), data)
	case url != "":
		return provider.DownloadResult(ctx, Provider, m.cfg.Fetcher, url)
	}
	return imagegen.GeneratedImage{}, provider.BadAnswer(Provider, true, fmt.Errorf("data[%d] has neither b64_json nor url", i))
}
