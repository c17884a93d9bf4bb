package openai

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
)

// imagesResponse is the answer of both endpoints (ImagesResponse).
type imagesResponse struct {
	Created int64 `json:"created"`
	Data    []struct {
		B64JSON string `json:"b64_json"`
		URL     string `json:"url"`
	} `json:"data"`
}

// images turns an answer into pictures of exactly ratio: base64 ones
// decoded, URL ones downloaded through the Fetcher, each centre-cropped
// when its size is only near the ratio.
func (m *Model) images(ctx context.Context, resp *provider.Response, ratio imagegen.AspectRatio) ([]imagegen.GeneratedImage, error) {
	var body imagesResponse
	if err := provider.DecodeJSON(Provider, resp, &body); err != nil {
		return nil, err
	}
	if len(body.Data) == 0 {
		return nil, provider.BadAnswer(Provider, true, errors.New("the answer holds no image"))
	}
	out := make([]imagegen.GeneratedImage, 0, len(body.Data))
	for i, d := range body.Data {
		data, err := m.imageData(ctx, i, d.B64JSON, d.URL)
		if err != nil {
			return nil, err
		}
		ct := provider.ContentType(data)
		if ct == "" {
			return nil, provider.BadAnswer(Provider, true, fmt.Errorf("data[%d] is not an image", i))
		}
		img, _, err := provider.CropToRatio(imagegen.GeneratedImage{ContentType: ct, Data: data}, ratio)
		if err != nil {
			return nil, provider.BadAnswer(Provider, false, fmt.Errorf("data[%d]: %w", i, err))
		}
		out = append(out, img)
	}
	return out, nil
}

// imageData is the bytes of one answered image.
func (m *Model) imageData(ctx context.Context, i int, b64, url string) ([]byte, error) {
	switch {
	case b64 != "":
		data, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			return nil, provider.BadAnswer(Provider, true, fmt.Errorf("data[%d].b64_json: %w", i, err))
		}
		return data, nil
	case url != "":
		if m.cfg.Fetcher == nil {
			return nil, provider.BadAnswer(Provider, false, fmt.Errorf("data[%d] is a URL and no Fetcher is configured", i))
		}
		data, _, err := m.cfg.Fetcher.Fetch(ctx, url)
		if err != nil {
			// The URL is signed; keep it out of the logs.
			return nil, &imagegen.ModelError{Provider: Provider, Retryable: true, Message: provider.MsgUnavailable,
				Err: fmt.Errorf("downloading data[%d].url: %w", i, err)}
		}
		return data, nil
	}
	return nil, provider.BadAnswer(Provider, true, fmt.Errorf("data[%d] has neither b64_json nor url", i))
}
