package fal

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
)

// output is the result of flux/dev and most fal text-to-image models.
type output struct {
	Images []struct {
		URL         string `json:"url"`
		Width       int    `json:"width"`
		Height      int    `json:"height"`
		ContentType string `json:"content_type"`
	} `json:"images"`
	HasNSFWConcepts []bool `json:"has_nsfw_concepts"`
	Seed            int64  `json:"seed"`
}

// msgNSFW is what the user reads when the safety checker flagged every
// image (fal then sends a black picture in its place).
const msgNSFW = "the image was withheld by the provider's safety checker as possibly unsafe content"

// images downloads the pictures of a result and centre-crops each to
// exactly ratio when its size is only near. Pictures the safety checker
// flagged (has_nsfw_concepts[i] true) are left out; when that leaves
// none, the generation is refused.
func (m *Model) images(ctx context.Context, resp *provider.Response, ratio imagegen.AspectRatio) ([]imagegen.GeneratedImage, error) {
	var body output
	if err := provider.DecodeJSON(Provider, resp, &body); err != nil {
		return nil, err
	}
	if err := provider.CheckAnswerImages(Provider, "images", len(body.Images)); err != nil {
		return nil, err
	}
	var out []imagegen.GeneratedImage
	flagged := 0
	for i, im := range body.Images {
		if i < len(body.HasNSFWConcepts) && body.HasNSFWConcepts[i] {
			flagged++
			continue
		}
		img, err := m.download(ctx, i, im.URL)
		if err != nil {
			return nil, err
		}
		out = append(out, img)
	}
	switch {
	case len(out) > 0:
		return provider.CropAll(Provider, out, ratio)
	case flagged > 0:
		return nil, provider.NewError(Provider, 200, fmt.Sprintf("has_nsfw_concepts true for %d of %d images", flagged, len(body.Images)),
			provider.Refusal(msgNSFW), provider.Code("has_nsfw_concepts"))
	}
	return nil, provider.BadAnswer(Provider, true, errors.New("the result holds no image"))
}

// download fetches one result picture: from fal's CDN through the
// Fetcher, or decoded from a data: URI (sync_mode answers).
func (m *Model) download(ctx context.Context, i int, u string) (imagegen.GeneratedImage, error) {
	switch {
	case u == "":
		return imagegen.GeneratedImage{}, provider.BadAnswer(Provider, true, fmt.Errorf("images[%d] has no url", i))
	case strings.HasPrefix(u, "data:"):
		data, err := decodeDataURI(u)
		if err != nil {
			return imagegen.GeneratedImage{}, provider.BadAnswer(Provider, true, fmt.Errorf("images[%d]: %w", i, err))
		}
		return provider.AnsweredImage(Provider, fmt.Sprintf("images[%d]", i), data)
	}
	return provider.DownloadResult(ctx, Provider, m.cfg.Fetcher, u)
}

// decodeDataURI returns the bytes of a base64 data: URI
// ("data:image/jpeg;base64,...").
func decodeDataURI(u string) ([]byte, error) {
	meta, payload, ok := strings.Cut(strings.TrimPrefix(u, "data:"), ",")
	if !ok {
		return nil, errors.New("data URI without a comma")
	}
	if !strings.HasSuffix(meta, ";base64") {
		return nil, errors.New("data URI is not base64")
	}
	data, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		data, err = base64.RawStdEncoding.DecodeString(payload)
	}
	return data, err
}
